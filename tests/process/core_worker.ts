// The core as a user's script runs it, with as little permission as it gets:
// lists organizations and prints how many, or, as JSON, the error's name,
// `reason`, `attempts` and message, how many requests were retried (token
// and API) and how many API requests were sent. An optional time limit per
// attempt (ms).
//
//   deno run --no-prompt --allow-net=127.0.0.1 core_worker.ts <environment JSON> <credentials JSON> [<timeout>]

import { collect, createClient, defineEnvironment } from "../../mod.ts";

const [environment, credentials] = Deno.args.slice(0, 2).map((arg) =>
  JSON.parse(arg)
);
const timeout = Deno.args[2];
let retries = 0;
let apiRequests = 0;
try {
  const client = createClient({
    environment: defineEnvironment(environment),
    ...credentials,
    ...(timeout === undefined ? {} : { timeout: Number(timeout) }),
    onEvent: (event) => {
      if (event.type === "token.retry" || event.type === "api.retry") retries++;
      if (event.type === "api.request") apiRequests++;
    },
  });
  console.log(
    `${
      (await collect(client.list("organizations"), { maxItems: 1000 })).length
    } organizations`,
  );
} catch (error) {
  const { name, reason, attempts, message } = error as Error & {
    reason?: string;
    attempts?: number;
  };
  console.log(
    JSON.stringify({ name, reason, attempts, retries, apiRequests, message }),
  );
  Deno.exitCode = 1;
}
