// Outside review r149 F4: a RateLimiter of the user's whose take() ignores its
// signal held client.fetch past the caller's abort, until it granted the slot
// (a TokenProvider ignoring its signal was raced already).

import { deepStrictEqual, equal, strictEqual } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import type { RateLimiter } from "../src/core/rate_limiter.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

/** A limiter whose take() ignores its signal: each waits until `grant` hands out its ticket. */
function deafLimiter() {
  const waiting: ((ticket: number) => void)[] = [];
  const answered: number[] = [];
  let taken: () => void = () => {};
  const asked = new Promise<void>((resolve) => taken = resolve);
  const limiter: RateLimiter = {
    limit: { requests: 1, interval: 60_000 },
    take: () => {
      taken();
      return new Promise<number>((resolve) => waiting.push(resolve));
    },
    answered: (ticket) => void answered.push(ticket),
    refused: () => {},
  };
  const grant = (ticket: number) => waiting.shift()?.(ticket);
  return { limiter, asked, answered, grant, waiting };
}

/** A few turns of the event loop (no time passes: nothing else is due). */
async function turns(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/** Whether `pending` settles within a few turns of the event loop. */
async function settlesSoon(pending: Promise<unknown>): Promise<boolean> {
  let settled = false;
  pending.then(() => settled = true, () => settled = true);
  await turns();
  return settled;
}

for (const call of ["fetch", "pciFetch"] as const) {
  Deno.test(`client.${call} rejects with the caller's abort reason while a limiter ignoring its signal waits, and answers the slot it grants later (never sent)`, async () => {
    await using api = await startFakePartnerApi();
    const deaf = deafLimiter();
    const client = createClient({
      environment: api.environment,
      ...api.credentials,
      rateLimit: deaf.limiter,
    });
    const caller = new AbortController();
    const pending = client[call]("organizations", { signal: caller.signal });
    pending.catch(() => {});
    await deaf.asked; // the token is in, the slot asked for
    const reason = new Error("caller gave up");
    caller.abort(reason);
    try {
      equal(await settlesSoon(pending), true, "settled before the slot came");
      strictEqual(await pending.catch((e) => e), reason);
    } finally {
      deaf.grant(7); // the slot comes late: answered, so the limiter frees it
      await pending.then((r) => r.body?.cancel(), () => {});
    }
    await turns(); // the late grant's
    deepStrictEqual(deaf.answered, [7]);
    equal(api.apiRequests, 0);
  });
}
