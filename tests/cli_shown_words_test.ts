// Review r9: a run that succeeds printed the words the user gave it as given: a sync's summary named a `--to` holding
// the cached access token (or the client secret) whole, as did a CSV header of `--fields`. Every line the CLI writes
// from them now goes through the check its failure line uses.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { createFileTokenStore } from "../src/store/mod.ts";
import { requestToken } from "../src/token/mod.ts";
import { configFor, run } from "./_cli_helpers.ts";

/** A 64-character access token, as a service's: the run is handed it, and caches it. */
const TOKEN =
  "T0QwErTyUiOpAsDfGhJkLzXcVbNm0123456789QwErTyUiOpAsDfGhJkLzXcx0yz";

/** Whether `text` holds a run of 12 characters of `value`, in any case. */
function holdsRun(text: string, value: string): boolean {
  const lower = text.toLowerCase();
  for (let at = 0; at + 12 <= value.length; at++) {
    if (lower.includes(value.slice(at, at + 12).toLowerCase())) return true;
  }
  return false;
}

/** Runs `test` with a fresh folder under .test-tmp, removed after it whatever it does. */
async function inFolder(test: (folder: string) => Promise<void>) {
  await Deno.mkdir(".test-tmp", { recursive: true });
  const folder = await Deno.makeTempDir({ dir: ".test-tmp", prefix: "cli-" });
  try {
    await test(folder);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
}

/**
 * A run against `api` handed `tokens` in turn, the last again (the fake is sent a token of its own), its cache in
 * `folder`'s `cache`.
 */
async function setup(
  api: Awaited<ReturnType<typeof startFakePartnerApi>>,
  folder: string,
  tokens = [TOKEN],
) {
  const real = await requestToken({ ...api.environment, ...api.credentials });
  let handed = 0;
  const fetch: typeof globalThis.fetch = (input, init) => {
    const request = new Request(input, init);
    if (request.url === api.environment.tokenUrl.href) {
      const token = tokens[Math.min(handed++, tokens.length - 1)];
      const answer = { access_token: token, token_type: "Bearer" };
      return Promise.resolve(Response.json({ ...answer, expires_in: 3600 }));
    }
    request.headers.set("authorization", `Bearer ${real.accessToken}`);
    return globalThis.fetch(request);
  };
  const cache = `${folder}/cache`;
  await Deno.mkdir(cache);
  const openCache = (secret: string, onNotice: (line: string) => void) => ({
    store: createFileTokenStore({
      folder: cache,
      clientSecret: secret,
      onNotice,
    }),
  });
  const extra = { fetch, openCache };
  return (args: string[]) => run(args, configFor(api), undefined, extra);
}

Deno.test("sync CLI: a run to success into a path holding the cached token or the client secret prints neither", async (t) => {
  await using api = await startFakePartnerApi({ items: { transactions: 3 } });
  await inFolder(async (folder) => {
    const cli = await setup(api, folder);
    equal((await cli(["token"])).code, 0); // TOKEN is cached
    const held = { token: TOKEN, secret: api.credentials.clientSecret };
    for (const [what, value] of Object.entries(held)) {
      await t.step(what, async () => {
        const target = `${folder}/${value}.jsonl`;
        const sync = ["sync", "transactions", "--to", target, "-v"];
        const result = await cli(sync);
        equal(result.code, 0, result.stderr);
        equal((await Deno.readTextFile(target)).split("\n").length, 4);
        ok(!holdsRun(result.stdout + result.stderr, value), result.stderr);
      });
    }
  });
});

Deno.test("list CLI: a CSV header of --fields holding the cached token does not print it", async () => {
  await using api = await startFakePartnerApi({ items: { organizations: 0 } });
  await inFolder(async (folder) => {
    const cli = await setup(api, folder);
    equal((await cli(["token"])).code, 0);
    const list = ["list", "organizations", "--format", "csv"];
    const result = await cli([...list, "--fields", `id,${TOKEN}`]);
    equal(result.code, 0, result.stderr);
    ok(result.stdout.startsWith("id,"), result.stdout);
    ok(!holdsRun(result.stdout + result.stderr, TOKEN), result.stdout);
  });
});

Deno.test("CLI: with --no-cache, a word holding the token the cache holds does not print it", async (t) => {
  await using api = await startFakePartnerApi({ items: { transactions: 3 } });
  await inFolder(async (folder) => {
    // The --no-cache runs are handed a token of their own: the cached one is known from the cache alone.
    const cli = await setup(api, folder, [TOKEN, "Zq8x".repeat(16)]);
    equal((await cli(["token"])).code, 0); // TOKEN is cached
    await t.step("a sync's --to", async () => {
      const target = `${folder}/${TOKEN}.jsonl`;
      const sync = ["sync", "transactions", "--to", target, "--no-cache", "-v"];
      const result = await cli(sync);
      equal(result.code, 0, result.stderr);
      ok(!holdsRun(result.stdout + result.stderr, TOKEN), result.stderr);
    });
    await t.step("a flag refused", async () => {
      const list = ["list", "things", "--no-cache", "--sort-direction", TOKEN];
      const result = await cli(list);
      equal(result.code, 2);
      ok(!holdsRun(result.stdout + result.stderr, TOKEN), result.stderr);
    });
  });
});
