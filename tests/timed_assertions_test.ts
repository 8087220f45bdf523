// tools/timed_assertions.ts, the check that no test asserts time or runs
// fake timers beside a real socket: what it catches, and what it leaves.

import { deepStrictEqual, equal } from "node:assert/strict";
import {
  findFakeTimersBesideSockets,
  findTimedAssertions,
} from "../tools/timed_assertions.ts";
// What the check must catch lives beside it, in tools/: tests/ holds no
// timed assertion, not even as a sample.
import { GENERIC_CALLS, TIMED } from "../tools/timed_assertions_samples.ts";

const lines = (source: string) =>
  findTimedAssertions(source).map(({ line }) => line);

Deno.test("timed assertions: a duration, a ratio of the platform's clock, or a bound written as a ratio (1.1 * n) is caught", () => {
  const source = TIMED;
  deepStrictEqual(lines(source), [5, 7, 8, 11, 12, 16, 17, 20, 21, 22]);
});

Deno.test("timed assertions: counts, instants of a fake clock and messages are left alone", () => {
  const source = `
// ok(elapsed < 100) in a comment
ok(count >= total / (2 * fleet.length), \`\${counts} of \${total}\`);
ok(mostInAnyWindow(arrivals, interval) <= limit.requests);
equal(timers.now, 1500, "not before the reset");
ok(token.expiresAt > clock(), "not expired by the hand-moved clock");
const waited = await waiter.getToken();
ok(waited instanceof TokenRequestError);
ok(/another run took|interrupted/.test(stderr), stderr);
const duration = metrics.find((metric) => metric.name === "duration");
equal(duration!.unit, "s");
const fleet = runFleet(port, api, startAt);
const lines = await fleet;
ok(lines.length <= 9, \`took \${took} ms\`);
ok(Math.floor(x) < limit);
ok(result.requests <= 47, "1.5 requests a page");
equal(amount, 0.01 * 3);
`;
  deepStrictEqual(findTimedAssertions(source), []);
});

Deno.test("timed assertions: the result of a generic call given a clock reading is a count, not a timing", () => {
  deepStrictEqual(findTimedAssertions(GENERIC_CALLS), []);
});

Deno.test("timed assertions: fake timers beside a real socket are caught, through the file's helpers too", () => {
  const source = `
async function origin() {
  const server = Deno.serve({ port: 0 }, () => new Response());
  return server;
}
const helper = async () => await origin();

Deno.test("beside a served fake", async () => {
  await using api = await startFakePartnerApi();
  await withFakeTimers(async (timers) => {});
});

Deno.test("beside a helper's server", async () => {
  await using server = await helper();
  await withFakeTimers(async (timers) => {});
});

Deno.test("in process", async () => {
  await withFakeTimers(async (timers) => {
    using api = inProcessFake();
  });
});

Deno.test("a socket, on real time", async () => {
  await using api = await startFakePartnerApi(); // withFakeTimers( in a comment
  equal(await fetched(api), 200);
});
`;
  const found = findFakeTimersBesideSockets(source);
  deepStrictEqual(found.map(({ line }) => line), [8, 13]);
  equal(found[0]!.name.startsWith('"beside a served fake"'), true);
});
