// The CLI run in-process: what it writes when the service misbehaves (a
// retried token request, control characters in answers, no answer at all),
// and --verbose. On fake timers over an in-process fake: no socket, no wait.

import { equal, ok } from "node:assert/strict";
import fc from "fast-check";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { configFor, run } from "./_cli_helpers.ts";
import { withFakeTimers } from "./_helpers.ts";
import { drive, inProcessFake, trackedIo } from "./_fast_setup.ts";
import { gauge, table } from "../src/cli/_render.ts";

/**
 * Runs `work` with the runtime's fetch (which the tool uses) replaced by
 * `fetch`: an in-process fake, so that on fake timers no socket is open and
 * only the clock moves time, whatever the load of the machine.
 */
async function withFetch<T>(
  fetch: typeof globalThis.fetch,
  work: () => Promise<T>,
): Promise<T> {
  const runtimeFetch = globalThis.fetch;
  globalThis.fetch = fetch;
  try {
    return await work();
  } finally {
    globalThis.fetch = runtimeFetch;
  }
}

/**
 * The runtime's own error for a refused connection, taken once on real
 * time before any test runs: what a token endpoint nobody listens on gives.
 */
const refused: unknown = await (async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${closed.addr.port}/oauth/token`;
  closed.close();
  return await fetch(url, { method: "POST" }).then(async (response) => {
    await response.body?.cancel();
    throw new Error(`${url} answered`);
  }, (error) => error);
})();

Deno.test("a retried token request says so on standard error", async () => {
  // The retry's backoff is driven, not waited for.
  const result = await withFakeTimers(async (timers) => {
    using api = inProcessFake({ now: () => timers.now });
    using io = trackedIo();
    api.service.injectTokenFaults({ kind: "status", status: 503 });
    return await withFetch(
      api.fetch,
      () => drive(timers, run(["token"], configFor(api)), io.idle),
    );
  });
  equal(result.code, 0, result.stderr);
  ok(
    result.stderr.includes("retrying the token request (attempt 2)"),
    result.stderr,
  );
  ok(result.stdout.includes("2 token requests"), result.stdout);
});

Deno.test("the CLI writes no raw control character from the service: table headers, key lists, gauges", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
  const evil = "\u001b]52;c;cGF5bG9hZA==\u0007\u001b[2J";
  let answer: unknown = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json(answer),
  );
  const config = {
    ...configFor(api),
    PARTNER_API_BASE_URL: `http://127.0.0.1:${server.addr.port}/api/`,
  };
  // deno-lint-ignore no-control-regex
  const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
  answer = [{ [evil]: 1, id: evil }];
  const table = await run([
    "list",
    "organizations",
    "--format",
    "table",
    "--no-cache",
  ], config);
  equal(table.code, 0, table.stderr);
  ok(!raw.test(table.stdout), JSON.stringify(table.stdout));
  answer = { [evil]: 1, [`${evil}2`]: 2 };
  const keys = await run(["list", "organizations", "--no-cache"], config);
  equal(keys.code, 1);
  ok(!raw.test(keys.stderr), JSON.stringify(keys.stderr));
  const bucket = { bucket: evil, limit: 10, remaining: 2, resetAfter: 60 };
  ok(!raw.test(gauge(bucket)), JSON.stringify(gauge(bucket)));
});

Deno.test("a quota bucket's gauge is a bar of its width whatever the service reports (more left than the limit crashed the token command with a RangeError, every run while the token was cached)", () => {
  fc.assert(
    fc.property(fc.nat(), fc.nat(), (limit, remaining) => {
      const bucket = { bucket: "per_hour", limit, remaining, resetAfter: 60 };
      const bar = gauge(bucket, 20).match(/[█░]+/)?.[0] ?? "";
      equal(bar.length, 20);
    }),
  );
});

Deno.test("a table's columns line up on the screen: a wide character or emoji takes two columns, a combining mark none, and a cell stops at 40 columns and 160 code units (r182 F4: widths were counted in UTF-16 code units; review r184b R2, R3)", () => {
  const marks = "\u0301".repeat(100_000);
  // [value, the columns a terminal draws it in]
  const cells: [string, number][] = [
    ["東京", 4],
    ["Zoe\u0308", 3],
    ["😀x", 3],
    ["🚀", 2],
    ["✅", 2],
    ["❤\uFE0F", 2],
    ["👍🏽", 2],
    ["\u1112\u1161\u11ab", 2], // 한, decomposed
    ["ｶﾅ", 2], // halfwidth katakana
    ["界".repeat(25), 39], // 19 of 2, and the mark
    [`a${marks}`, 2], // cut at 160 code units
  ];
  const rows = cells.map(([name]) => ({ name, id: "x" }));
  const lines = table(["name", "id"], rows).split("\n").slice(1, -1);
  cells.forEach(([name, columns], i) => {
    const shown = lines[i]!.slice(0, -"  x".length);
    const text = shown.trimEnd();
    ok(name.startsWith(text.replace(/…$/, "")), `${i}`);
    equal(shown.length - text.length, 39 - columns, `${i}`); // padded to the widest, 39
  });
});

Deno.test("--verbose writes a line per token and API request, never the secret or token", async () => {
  await using api = await startFakePartnerApi({ items: { organizations: 3 } });
  const config = configFor(api);
  const listed = await run(
    ["list", "organizations", "--limit", "2", "-v", "--no-cache"],
    config,
  );
  equal(listed.code, 0, listed.stderr);
  const lines = listed.stderr.trim().split("\n");
  const tokenLine = `POST ${api.environment.tokenUrl.href} ok`;
  ok(lines.some((line) => line.startsWith(tokenLine)), listed.stderr);
  const pages = lines.filter((line) => line.startsWith("GET "));
  equal(pages.length, 2, listed.stderr);
  ok(
    pages[0]!.startsWith(
      `GET ${api.environment.baseUrl.href}organizations 200, attempt 1, `,
    ),
  );
  ok(!pages[0]!.includes("?"), "no query");
  const token =
    await (await run(["token", "--show-token", "--no-cache"], config)).stdout
      .trim();
  ok(!listed.stderr.includes(api.credentials.clientSecret));
  ok(!listed.stderr.includes(token));
});

Deno.test("with no answer at all, the message names the system's reason, and --verbose the causes, never the secret", async () => {
  // The runtime's refused connection, on fake timers: the retries' backoff
  // is driven, not waited for.
  using api = inProcessFake();
  const config = configFor(api);
  const [plain, verbose] = await withFakeTimers(async (timers) => {
    using io = trackedIo();
    const nowhere = () => Promise.reject(refused);
    return await withFetch(nowhere, async () => [
      await drive(timers, run(["token", "--no-cache"], config), io.idle),
      await drive(
        timers,
        run(["token", "--verbose", "--no-cache"], config),
        io.idle,
      ),
    ]);
  });
  equal(plain.code, 1);
  ok(/connection refused/i.test(plain.stderr), plain.stderr);
  equal(verbose.code, 1);
  ok(verbose.stderr.includes("caused by "), verbose.stderr);
  for (const result of [plain, verbose]) {
    ok(!result.stderr.includes(api.credentials.clientSecret));
  }
});
