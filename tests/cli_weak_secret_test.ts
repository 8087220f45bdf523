// Review r9 (3): a weak client secret sharing 12 characters with an ordinary word hid the word on a run that went on
// (a CSV header `organizationID` under the secret `organizationsSecret-2026`). Those lines now hide a word holding the
// secret whole, in any form the library reads; the failure line keeps hiding a run of it.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { configFor, run } from "./_cli_helpers.ts";

/** A secret of two ordinary words: its first 12 characters begin the service's `organizationID`. */
const WEAK = "organizationsSecret-2026";

/** Whether `text` holds WEAK whole: as is, decoded up to three times, without its `/`s, or base64, in any case. */
function holdsWeak(text: string): boolean {
  let read = text;
  const forms = [text];
  for (let i = 0; i < 3; i++) forms.push(read = decodeURIComponent(read));
  const lower = forms.flatMap((form) => [form, form.replaceAll("/", "")])
    .join("\n").toLowerCase();
  return lower.includes(WEAK.toLowerCase()) || text.includes(btoa(WEAK));
}

/** Runs `test` with a fresh folder under .test-tmp, removed after it whatever it does. */
async function inFolder(test: (folder: string) => Promise<void>) {
  await Deno.mkdir(".test-tmp", { recursive: true });
  const folder = await Deno.makeTempDir({ dir: ".test-tmp", prefix: "weak-" });
  try {
    await test(folder);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
}

Deno.test("list CLI: a header sharing 12 characters with a weak secret shows as it is", async () => {
  await using api = await startFakePartnerApi({
    items: { organizations: 2 },
    credentials: { clientSecret: WEAK },
  });
  const list = ["list", "organizations", "--no-cache", "--format"];
  const fields = ["--fields", "organizationID,companyName"];
  const csv = await run([...list, "csv", ...fields], configFor(api));
  equal(csv.code, 0, csv.stderr);
  equal(csv.stdout.split("\r\n")[0], "organizationID,companyName");
  const table = await run([...list, "table", ...fields], configFor(api));
  equal(table.code, 0, table.stderr);
  equal(
    table.stdout.split("\n")[0]!.split(/\s+/).join(","),
    csv.stdout.split("\r\n")[0],
  );
});

Deno.test("sync CLI: a --to holding a weak secret whole, in any form, does not print it; an ordinary word sharing 12 of its characters does", async (t) => {
  await using api = await startFakePartnerApi({
    items: { transactions: 3 },
    credentials: { clientSecret: WEAK },
  });
  await inFolder(async (folder) => {
    await Deno.mkdir(`${folder}/organizations`);
    const encoded = [1, 2, 3].reduce((text) => encodeURIComponent(text), WEAK);
    const names = {
      whole: `${WEAK}.jsonl`,
      "split by a /": `${WEAK.slice(0, 13)}/${WEAK.slice(13)}.jsonl`,
      "encoded thrice": `${encoded}.jsonl`,
      base64: `${btoa(WEAK)}.jsonl`,
      ordinary: "organizationID.jsonl",
    };
    for (const [what, name] of Object.entries(names)) {
      await t.step(what, async () => {
        const target = `${folder}/${name}`;
        const sync = ["sync", "transactions", "--to", target, "--no-cache"];
        const result = await run([...sync, "-v"], configFor(api));
        equal(result.code, 0, result.stderr);
        const printed = result.stdout + result.stderr;
        ok(!holdsWeak(printed), printed);
        equal(printed.includes(`${target}:`), what === "ordinary", printed);
      });
    }
  });
});

Deno.test("sync CLI: a --to holding a secret of words and spaces does not print it", async () => {
  const secret = "correct horse battery staple";
  await using api = await startFakePartnerApi({
    items: { transactions: 3 },
    credentials: { clientSecret: secret },
  });
  await inFolder(async (folder) => {
    const target = `${folder}/${secret}.jsonl`;
    const sync = ["sync", "transactions", "--to", target, "--no-cache", "-v"];
    const result = await run(sync, configFor(api));
    equal(result.code, 0, result.stderr);
    ok(!(result.stdout + result.stderr).includes(secret), result.stderr);
  });
});
