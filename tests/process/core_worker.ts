// The core as a user's script runs it, with as little permission as it gets:
// lists organizations and prints how many, or the error's name.
//
//   deno run --no-prompt --allow-net=127.0.0.1 core_worker.ts <environment JSON> <credentials JSON>

import { collect, createClient, defineEnvironment } from "../../mod.ts";

const [environment, credentials] = Deno.args.map((arg) => JSON.parse(arg));
try {
  const client = createClient({
    environment: defineEnvironment(environment),
    ...credentials,
  });
  console.log(
    `${
      (await collect(client.list("organizations"), { maxItems: 1000 })).length
    } organizations`,
  );
} catch (error) {
  console.log((error as Error).name);
  Deno.exitCode = 1;
}
