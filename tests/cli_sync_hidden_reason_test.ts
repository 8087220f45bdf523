// Review of fd7c0a02: a sync refusal whose words the library dropped whole (a run of the client secret or of the run's
// token in its copy's or list's path) lost what the CLI makes of such a refusal: `--to`'s to fix (exit 2), and the
// command that confirms a mass delete.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { requestToken } from "../src/token/mod.ts";
import { confirmArgs } from "../src/cli/_sync.ts";
import { configFor, run } from "./_cli_helpers.ts";
import { freshTarget } from "./_sync_fake.ts";

/** Whether `text` holds a run of 12 characters of `value`, in any case. */
function holdsRun(text: string, value: string): boolean {
  const lower = text.toLowerCase();
  for (let at = 0; at + 12 <= value.length; at++) {
    if (lower.includes(value.slice(at, at + 12).toLowerCase())) return true;
  }
  return false;
}

/** `value` split by a '/' in its middle: the library drops a text holding it whole. */
const split = (value: string) =>
  `${value.slice(0, value.length >> 1)}/${value.slice(value.length >> 1)}`;

Deno.test("sync CLI: a copy that is not one, at a path holding the client secret split by a '/', is --to's to fix (exit 2)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 4 } });
  const secret = api.credentials.clientSecret;
  const [folder, name] = split(secret).split("/");
  const target = await freshTarget(`cli-sync-hidden/${folder}`, `${name}.db`);
  await Deno.writeTextFile(target, "not a database\n".repeat(400));
  const args = ["sync", "transactions", "--to", target, "--no-cache"];
  const result = await run(args, configFor(api));
  equal(result.code, 2, result.stderr);
  ok(!holdsRun(result.stderr + result.stdout, secret), result.stderr);
});

Deno.test("sync CLI: a mass delete held back on a list whose path holds the run's token split by a '/' still names the --max-deletes that confirms it", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 40 } });
  const token =
    "T0QwErTyUiOpAsDfGhJkLzXcVbNm0123456789QwErTyUiOpAsDfGhJkLzXcx0yz";
  const list = `transactions/${split(token)}`;
  // The run is handed `token`; the fake is sent one of its own, at its own list's path.
  const real = await requestToken({ ...api.environment, ...api.credentials });
  const fetch: typeof globalThis.fetch = (input, init) => {
    const request = new Request(input, init);
    if (request.url === api.environment.tokenUrl.href) {
      const answer = { access_token: token, token_type: "Bearer" };
      return Promise.resolve(Response.json({ ...answer, expires_in: 3600 }));
    }
    const sent = new Request(
      request.url.replace(list, "transactions"),
      request,
    );
    sent.headers.set("authorization", `Bearer ${real.accessToken}`);
    return globalThis.fetch(sent);
  };
  const target = await freshTarget("cli-sync-hidden", "mass.jsonl");
  const args = ["sync", list, "--to", target, "--no-cache", "--sort-by"];
  args.push("creationDate", "--id", "transactionID");
  const first = await run(args, configFor(api), undefined, { fetch });
  equal(first.code, 0, first.stderr);
  for (let i = 1; i <= 14; i++) {
    api.remove("transactions", `tx_${String(i).padStart(6, "0")}`);
  }
  const sweep = [...args, "--sweep", "all", "--max-deletes", "0.2"];
  const held = await run(sweep, configFor(api), undefined, { fetch });
  equal(held.code, 1, held.stderr);
  ok(!holdsRun(held.stderr + held.stdout, token), held.stderr);
  // 14 of 40 rows: the share that confirms them, as the confirming command ends.
  ok(held.stderr.includes(confirmArgs([], 0.35)), held.stderr);
});

// r176b F3: items keeping their id under another name than --id's failed with exit 1 and no word of --id.
Deno.test("sync CLI: a list whose items lack --id's field is --id's to fix (exit 2, naming --id)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 4 } });
  const target = await freshTarget("cli-sync-missing-id", "copy.db");
  const args = ["sync", "transactions", "--to", target, "--no-cache"];
  args.push("--sort-by", "creationDate", "--id", "nope");
  const result = await run(args, configFor(api));
  equal(result.code, 2, result.stderr);
  ok(result.stderr.includes("--id"), result.stderr);
});

// r212a F1: with no --sort-by the sync sorts by --id's field, so a wrong --id met a 400 first: exit 1, no word of --id.
Deno.test("sync CLI: a wrong --id the service refuses to sort by (no --sort-by) is --id's to fix (exit 2, naming --id)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 4 } });
  const target = await freshTarget("cli-sync-sort-id", "copy.db");
  const args = ["sync", "transactions", "--to", target, "--no-cache"];
  const result = await run([...args, "--id", "nope"], configFor(api));
  equal(result.code, 2, result.stderr);
  ok(result.stderr.includes("--id"), result.stderr);
  equal((await run(args, configFor(api))).code, 0); // the list's own id field
  // A service's other words for it (r215a F3: these exited 1 again, no word of --id).
  for (
    const said of [
      '{"message":"cannot sort by transactionID"}',
      '{"error":"invalid order parameter: transactionID"}',
      '{"error":"bad field transactionID"}',
    ]
  ) {
    await using other = await startFakePartnerApi({
      items: { transactions: 4 },
    });
    const fault = { kind: "body", status: 400, body: said } as const;
    other.injectApiFaults(...Array(20).fill(fault)); // the sync asks again at other sizes
    const to = await freshTarget("cli-sync-sort-words", "copy.db");
    const worded = await run(
      ["sync", "transactions", "--to", to, "--no-cache"],
      configFor(other),
    );
    equal(worded.code, 2, worded.stderr);
    ok(worded.stderr.includes("--id"), worded.stderr);
  }
  // Another 400 stays the service's (exit 1): r214a F1, a page size refused blamed --id.
  await using small = await startFakePartnerApi({ maxLimit: 40 });
  const refused = await run(args, configFor(small));
  equal(refused.code, 1, refused.stderr);
  ok(!refused.stderr.includes("--id"), refused.stderr);
});
