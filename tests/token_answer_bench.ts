// deno task bench
//
// A token endpoint's answer holding many token fields (a hostile or broken
// one): every token in it is hidden from the error, its headers and its
// quota buckets' names (r223a F1). Side by side, in one run, on loopback: a
// 429 of 62 KB holding 2,400 token fields, fresh ones each time, and 90
// headers quoting them, against the same answer holding one (the floor).
// Goal: the cost grows with the number of tokens, not with tokens × texts
// (one redactor for all of an answer's tokens): ≤ 1,000× the floor (one
// redaction per token and text took 50 to 60 s an answer, the event loop
// blocked).

import { requestToken } from "../src/token/mod.ts";
import { QuotaExceededError } from "../src/core/errors.ts";

let count = 1, round = 0;
const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  () => {
    // Fresh tokens each time: an answer's redactor is made once and kept.
    const token = (i: number) => `t${round++ % 100}x${String(i).padStart(5)}`;
    const fields = Array.from(
      { length: count },
      (_, i) => `"access_token":"${token(i)}"`,
    );
    const body = `{"error":"too_many_requests",${fields.join(",")}}`;
    const headers = new Headers({ "retry-after": "60" });
    // Fewer than 100: the runtime's client refuses an answer with more.
    for (let i = 0; i < 90; i++) headers.set(`x-echo-${i}`, `${token(i)} said`);
    return new Response(body.padEnd(62_000), { status: 429, headers });
  },
);
const options = {
  tokenUrl: `http://127.0.0.1:${server.addr.port}/token`,
  audience: "https://api.example",
  clientId: "partner-client",
  clientSecret: "bench-client-secret-value",
};

async function refused(fields: number) {
  count = fields;
  try {
    await requestToken(options);
  } catch (error) {
    if (!(error instanceof QuotaExceededError)) throw error;
  }
}

/** The median time of `rounds` answers holding `fields` token fields each. */
async function median(fields: number, rounds: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    await refused(fields);
    times.push(performance.now() - started);
  }
  return times.toSorted((a, b) => a - b)[Math.floor(rounds / 2)]!;
}

await median(1, 20); // warm-up, not a result
const floor = await median(1, 41), many = await median(2_400, 11);
console.log(
  `a 429 of 62 KB holding 2,400 token fields and 90 headers ÷ one holding one (the floor; goal ≤ 1,000×): ${
    (many / floor).toFixed(0)
  }× (${many.toFixed(0)} ms against ${floor.toFixed(2)} ms)`,
);
await server.shutdown();
