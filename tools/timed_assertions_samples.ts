// Samples of what tools/timed_assertions.ts must catch: timed assertions as
// tests wrote them before round 5. Kept here, not under tests/, so that
// tests/ holds none, not even as a sample. Read by
// tests/timed_assertions_test.ts, which knows their line numbers.

/** A test's text with a duration or a ratio asserted on lines 5, 7, 8, 11, 12, 16, 17, 20, 21 and 22. */
export const TIMED = `
const started = Date.now();
await crawl();
const elapsed = Date.now() - started;
ok(elapsed <= 1.1 * floor, \`\${elapsed} ms\`);
const took = performance.now() - started;
ok(took < 200);
ok(Date.now() - started < 5000, "no backoff");
const at = performance.now();
const heldAt = performance.now();
ok(at - heldAt < 50);
assertLess(
  took,
  100,
);
equal(timers.now - begun, 50);
ok(sent / floor <= 1.1);
const killAt = startAt + 1000;
const startAt = Date.now() + 3000;
ok(refused.every(({ at }) => at < killAt + interval));
ok(first.requests <= 1.1 * 5 + 2);
ok(sent * 1.5 > expected);
`;

/**
 * Counts read from generic calls given a clock reading (a fleet's start):
 * none is a timing. Kept here too, so that tests/ holds no clock reading
 * beside an assertion even as a sample.
 */
export const GENERIC_CALLS = `
const fleetLines = runWorkers<{ n: number }>(port, Date.now() + 3000);
ok((await fleetLines).length <= 9);
const skewLines = runWorkers<{ n: number; m: number }>(port, Date.now() + 3000);
ok((await skewLines).length <= 9);
`;
