// deno task bench
//
// The limiter's own cost over real I/O (issue 47): serial calls on loopback,
// the fake in another process, side by side in one run, each a ratio to raw
// fetch() with the same token under AbortSignal.timeout (the floor, as a
// user writes it; bench code may use it):
// - client.fetch paced at 100,000 requests per second (a limit it never
//   reaches: its cost, never a wait), goal ≤ 1.08×;
// - the same paced at 10,000 per minute (a window far wider than the run);
// - the same client unpaced (`rateLimit: false`): what pacing adds is the
//   difference.

import { createClient } from "../src/client/mod.ts";
import {
  clientFetch,
  ratiosToFloor,
  rawFetch,
  showRatio,
  startRemoteFake,
} from "./_bench_server.ts";

const fake = await startRemoteFake([]);
const { environment } = fake;
const credentials = {
  clientId: fake.clientId,
  clientSecret: fake.clientSecret,
};
const unpaced = createClient({ environment, ...credentials, rateLimit: false });
const tokenProvider = unpaced.tokenProvider;
const paced = createClient({
  environment,
  tokenProvider,
  rateLimit: { requests: 100_000, interval: 1000 },
});
const pacedWide = createClient({
  environment,
  tokenProvider,
  rateLimit: { requests: 10_000, interval: 60_000 },
});
const { accessToken } = await tokenProvider.getToken();
const raw = rawFetch(environment.baseUrl, accessToken);

// 41 rounds of 100 serial calls each side (10,000 per minute is never
// reached: 4,100 calls in all), in rotating order.
const ratios = await ratiosToFloor(
  {
    raw,
    paced: clientFetch(paced),
    pacedWide: clientFetch(pacedWide),
    unpaced: clientFetch(unpaced),
  },
  "raw",
  41,
  100,
);
const LABELS: Record<string, string> = {
  paced: "client.fetch paced at 100,000/s (goal ≤ 1.08×)",
  pacedWide: "client.fetch paced at 10,000/min",
  unpaced: "client.fetch unpaced",
};
for (const [name, label] of Object.entries(LABELS)) {
  console.log(
    `${label} ÷ raw fetch() under AbortSignal.timeout (the floor; the fake in another process), serial, interleaved: ${
      showRatio(ratios[name]!)
    }`,
  );
}

Deno.bench({
  name: "raw fetch() under AbortSignal.timeout",
  group: "paced",
  baseline: true,
  fn: raw,
});
Deno.bench({
  name: "client.fetch() paced at 100,000/s",
  group: "paced",
  fn: clientFetch(paced),
});
Deno.bench({
  name: "client.fetch() unpaced",
  group: "paced",
  fn: clientFetch(unpaced),
});
