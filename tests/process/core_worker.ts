// The core as a user's script runs it, with as little permission as it gets:
// lists organizations and prints how many, or the error's name and how many
// token requests were retried. An optional time limit per attempt (ms).
//
//   deno run --no-prompt --allow-net=127.0.0.1 core_worker.ts <environment JSON> <credentials JSON> [<timeout>]

import { collect, createClient, defineEnvironment } from "../../mod.ts";

const [environment, credentials] = Deno.args.slice(0, 2).map((arg) =>
  JSON.parse(arg)
);
const timeout = Deno.args[2];
let retries = 0;
try {
  const client = createClient({
    environment: defineEnvironment(environment),
    ...credentials,
    ...(timeout === undefined ? {} : { timeout: Number(timeout) }),
    onEvent: (event) => {
      if (event.type === "token.retry") retries++;
    },
  });
  console.log(
    `${
      (await collect(client.list("organizations"), { maxItems: 1000 })).length
    } organizations`,
  );
} catch (error) {
  console.log(`${(error as Error).name}, ${retries} retries`);
  Deno.exitCode = 1;
}
