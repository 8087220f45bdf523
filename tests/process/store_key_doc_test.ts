// Issue 46: the store key as the docs state it. A client secret of 32
// characters or more is keyed by HKDF (microseconds), a shorter one keeps
// PBKDF2 (about 50 ms once per process): tests/token_store_key_test.ts holds
// the code to it. Here, what the README and docs/ say: docs/fleets.md said
// every secret went through PBKDF2, and docs/performance.md blamed the cold
// start on a stretch a long secret no longer pays. Every paragraph that names
// PBKDF2 names the other side too: HKDF and the 32 characters between them.
// Lives with the process tests for the docs it reads (--allow-read=README.md,docs).

import { deepStrictEqual, ok } from "node:assert/strict";

/** README.md and every page of docs/, by name. */
async function pages(): Promise<Map<string, string>> {
  const found = new Map([["README.md", await Deno.readTextFile("README.md")]]);
  for await (const entry of Deno.readDir("docs")) {
    if (!entry.isFile || !entry.name.endsWith(".md")) continue;
    const path = `docs/${entry.name}`;
    found.set(path, await Deno.readTextFile(path));
  }
  return found;
}

Deno.test("the docs state the store key as it is: every paragraph naming PBKDF2 names HKDF and the 32 characters between them", async () => {
  const wrong: string[] = [];
  let named = 0;
  for (const [path, text] of await pages()) {
    for (const paragraph of text.split(/\n\s*\n/)) {
      if (!paragraph.includes("PBKDF2")) continue;
      named++;
      const flat = paragraph.replace(/\s+/g, " ");
      if (!flat.includes("HKDF") || !/32 characters/.test(flat)) {
        wrong.push(`${path}: ${flat.slice(0, 160)}…`);
      }
    }
  }
  deepStrictEqual(wrong, []);
  // The README's store-key line and its upgrading note, fleets and performance.
  ok(named >= 4, `${named} paragraphs name PBKDF2`);
});
