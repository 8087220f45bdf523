// deno task bench
//
// Cold fleets of 1, 4 and 12 deno processes asking for a token at the same
// moment, with a shared KV file and without (each its own cache), measured
// side by side in one run: token requests (goal: always 1 with KV, N
// without) and time to first token of the slowest process. A fleet's wall
// time is mostly process start-up, so it is not timed with Deno.bench. The
// floor: 1 token request for the fleet, and the first token no later than
// one process alone would have it.
// (A warm getToken() never reaches the store: the provider answers from
// memory, so it is measured in token_bench.ts. Fleets over many lifetimes,
// with an outage, are in scale_bench.ts.)

import { startFakePartnerApi } from "../src/testing/mod.ts";
import { scratchDir, startFleet } from "./process/_fleet.ts";

const SIZES = [1, 4, 12];
const api = await startFakePartnerApi({ quota: { perHour: 1e6, perDay: 1e6 } });
const dir = await scratchDir();
let run = 0;
globalThis.addEventListener("unload", () => {
  void api.close();
  Deno.removeSync(dir, { recursive: true });
});

/** Runs one cold fleet; returns token requests and time to first token (max over processes). */
async function coldFleet(size: number, shared: boolean) {
  const before = api.tokenRequests;
  const kvPath = shared ? `${dir}/fleet-${run++}.sqlite` : undefined;
  const results = await startFleet(api, size, {
    ...(kvPath === undefined ? {} : { kvPath }),
    startDelay: 400 + 150 * size, // every process is up before the start
  }).results();
  if (results.some((result) => result === undefined)) {
    throw new Error("a process failed");
  }
  const ms = results.map((result) => result!.ms);
  return { requests: api.tokenRequests - before, slowest: Math.max(...ms) };
}

const rows = [];
for (const size of SIZES) {
  const without = await coldFleet(size, false);
  const withKv = await coldFleet(size, true);
  rows.push({
    processes: size,
    "requests without KV": without.requests,
    "requests with KV": withKv.requests,
    "first token without KV (ms)": without.slowest,
    "first token with KV (ms)": withKv.slowest,
    "requests saved": `${without.requests / withKv.requests}x`,
  });
}
console.table(rows);
