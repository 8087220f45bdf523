// deno task bench
//
// An edge function's cold start to its first answer, against DESIGN's goal
// of at most 1.5× a hello-world `Deno.serve` plus one token trip:
// examples/edge_function.ts under `deno serve` as its header says (Deno KV
// in memory), from the process's start to its first answer of
// GET /organizations/count (a token and a list page), beside a hello-world
// `deno serve` started and asked the same way, and one token round trip to
// the same fake (in another process) as a cold isolate makes it: a fresh
// process's first `fetch`, which pays for setting up the runtime's HTTP
// client (about 10 ms) as the edge function's first token request does. Side
// by side in one run, ROUNDS rounds with the three sides in rotating order;
// per round, edge ÷ hello and (edge − token trip) ÷ hello, the figure the
// goal bounds by 1.5. A warm trip (this process's) is printed beside it, and
// the example as one module (`deno bundle`), which tells the library's own
// start from Deno loading its 52 modules one by one. What the example answers
// is tests/process/edge_serve_test.ts's.

import { CONFIG_VARIABLES } from "../mod.ts";
import { requestToken } from "../src/token/mod.ts";
import { startRemoteFake } from "./_bench_server.ts";
import { denoServeArgs, freePort } from "./_deno_serve.ts";

const ROUNDS = 21;
const GOAL = 1.5;
const HELLO = ".test-tmp/hello_serve.ts";
const BUNDLED = ".test-tmp/edge_function_bundled.js";

await Deno.mkdir(".test-tmp", { recursive: true });
await Deno.writeTextFile(
  HELLO,
  'export default { fetch: () => new Response("hello") } satisfies Deno.ServeDefaultExport;\n',
);
const bundle = await new Deno.Command("deno", {
  args: ["bundle", "--quiet", "-o", BUNDLED, "examples/edge_function.ts"],
}).output();
if (!bundle.success) throw new Error("deno bundle of the edge example failed");
await using fake = await startRemoteFake([]);
const { environment, clientId, clientSecret } = fake;
const env = {
  [CONFIG_VARIABLES.baseUrl]: environment.baseUrl.href,
  [CONFIG_VARIABLES.pciBaseUrl]: environment.pciBaseUrl.href,
  [CONFIG_VARIABLES.tokenUrl]: environment.tokenUrl.href,
  [CONFIG_VARIABLES.audience]: environment.audience,
  [CONFIG_VARIABLES.clientId]: clientId,
  [CONFIG_VARIABLES.clientSecret]: clientSecret,
  PARTNER_API_KV_PATH: ":memory:",
};

/**
 * Milliseconds from starting `deno serve` of `module` to its first answer
 * at `path` (polled every 2 ms until it listens); the server is stopped.
 */
async function coldStart(module: string, path: string): Promise<number> {
  const port = freePort();
  const started = performance.now();
  const server = new Deno.Command("deno", {
    args: denoServeArgs(module, port),
    env,
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    while (true) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`);
        const ms = performance.now() - started;
        if (!response.ok) {
          throw new Error(`${module}: ${await response.text()}`);
        }
        await response.body?.cancel();
        return ms;
      } catch (error) {
        if (!(error instanceof TypeError)) throw error; // not listening yet
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
  } finally {
    server.kill();
    await server.status;
  }
}

/** A fresh process's first token request, as bare `fetch`, timed inside it from the request to its answer's end. */
const COLD_TRIP = `const started = performance.now();
const form = { grant_type: "client_credentials", client_id: ${
  JSON.stringify(clientId)
},
  client_secret: ${JSON.stringify(clientSecret)}, audience: ${
  JSON.stringify(environment.audience)
} };
const answer = await fetch(${
  JSON.stringify(environment.tokenUrl.href)
}, { method: "POST", body: new URLSearchParams(form) });
if (!answer.ok) throw new Error(await answer.text());
await answer.text();
console.log(performance.now() - started);`;

async function tokenTrip(): Promise<number> {
  const { stdout, success } = await new Deno.Command("deno", {
    args: ["eval", "--quiet", COLD_TRIP],
    stderr: "inherit",
  }).output();
  if (!success) throw new Error("the cold token trip failed");
  return Number(new TextDecoder().decode(stdout));
}

async function warmTokenTrip(): Promise<number> {
  const started = performance.now();
  await requestToken({ ...environment, clientId, clientSecret });
  return performance.now() - started;
}

const sides = {
  edge: () => coldStart("examples/edge_function.ts", "/organizations/count"),
  bundled: () => coldStart(BUNDLED, "/organizations/count"),
  hello: () => coldStart(HELLO, "/"),
  token: tokenTrip,
  warmToken: warmTokenTrip,
};
type Side = keyof typeof sides;
const names = Object.keys(sides) as Side[];
const times: Record<Side, number>[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const time = {} as Record<Side, number>;
  for (let i = 0; i < names.length; i++) {
    const name = names[(round + i) % names.length]!;
    time[name] = await sides[name]();
  }
  times.push(time);
}

const median = (values: number[]) =>
  values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]) =>
  `${median(values).toFixed(2)}× (${Math.min(...values).toFixed(2)}–${
    Math.max(...values).toFixed(2)
  })`;
const ms = (side: Side) => median(times.map((time) => time[side])).toFixed(1);
const beyondToken = times.map((t) => (t.edge - t.token) / t.hello);
const bundledBeyond = times.map((t) => (t.bundled - t.token) / t.hello);
console.log(
  `edge function cold start to its first answer, ${ROUNDS} interleaved rounds (medians): ` +
    `edge example ${ms("edge")} ms, hello-world deno serve ${
      ms("hello")
    } ms, one token trip ${ms("token")} ms cold (${ms("warmToken")} ms warm)`,
);
console.log(
  `edge ÷ hello: ${spread(times.map((t) => t.edge / t.hello))}; ` +
    `(edge − token trip) ÷ hello: ${spread(beyondToken)}, goal ≤ ${GOAL}×: ${
      median(beyondToken) <= GOAL ? "met" : "not met"
    }; bundled ${ms("bundled")} ms, (bundled − token trip) ÷ hello: ${
      spread(bundledBeyond)
    }`,
);
