// deno task bench
//
// What events cost when nobody listens, side by side in one run: the code of
// the commit before events (f44e5ee, extracted with `git archive` into
// .test-tmp) against today's, on the warm getToken() path and on
// client.fetch() against the fake in another process. The floor is the
// code without events: goal 1.00× within noise. A no-op listener is shown
// beside them for what listening costs.

import { createClient, createTokenProvider } from "../mod.ts";
import { interleaved, startRemoteFake } from "./_bench_server.ts";

const BEFORE = "f44e5ee";
const dir = `.test-tmp/before-events-${BEFORE}`;
await Deno.mkdir(dir, { recursive: true });
const archive = new Deno.Command("sh", {
  args: ["-c", `git archive ${BEFORE} mod.ts src | tar -x -C ${dir}`],
}).outputSync();
if (!archive.success) throw new Error(new TextDecoder().decode(archive.stderr));
const before: typeof import("../mod.ts") = await import(
  new URL(`../${dir}/mod.ts`, import.meta.url).href
);

const fake = await startRemoteFake([]);
const options = {
  environment: fake.environment,
  clientId: fake.clientId,
  clientSecret: fake.clientSecret,
  rateLimit: { requests: 10_000, interval: 1 },
};
const clients = {
  before: before.createClient(options),
  unset: createClient(options),
  listening: createClient({ ...options, onEvent: () => {} }),
};
const credentials = {
  environment: fake.environment,
  clientId: fake.clientId,
  clientSecret: fake.clientSecret,
};
const providers = {
  before: before.createTokenProvider(credentials),
  unset: createTokenProvider(credentials),
  listening: createTokenProvider({ ...credentials, onEvent: () => {} }),
};
for (const provider of Object.values(providers)) await provider.getToken();

const fetchOne =
  (client: { fetch: typeof clients.unset.fetch }) => async () => {
    const response = await client.fetch("organizations?limit=1");
    await response.arrayBuffer();
  };
const perFetch = await interleaved({
  before: fetchOne(clients.before),
  unset: fetchOne(clients.unset),
  listening: fetchOne(clients.listening),
});
const warm = (provider: { getToken(): Promise<unknown> }) => async () => {
  for (let i = 0; i < 100; i++) await provider.getToken();
};
const perWarm = await interleaved({
  before: warm(providers.before),
  unset: warm(providers.unset),
  listening: warm(providers.listening),
});
const ratio = (times: Record<string, number>, name: string) =>
  (times[name]! / times.before!).toFixed(3);
console.log("onEvent unset vs the code before events (interleaved medians)");
console.table([
  {
    path: "client.fetch()",
    "unset ÷ before": ratio(perFetch, "unset"),
    "no-op listener ÷ before": ratio(perFetch, "listening"),
    "before (µs)": (perFetch.before! * 1000).toFixed(1),
  },
  {
    path: "warm getToken()",
    "unset ÷ before": ratio(perWarm, "unset"),
    "no-op listener ÷ before": ratio(perWarm, "listening"),
    "before (µs)": (perWarm.before! * 10).toFixed(3),
  },
]);
await fake[Symbol.asyncDispose]();
Deno.removeSync(dir, { recursive: true });
