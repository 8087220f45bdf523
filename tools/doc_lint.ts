// `deno task check`: `deno doc --lint` over every entry of deno.json together,
// then over each entry alone. Needs --allow-read=deno.json and
// --allow-run=deno.
//
// Together, nothing may fail: every type a signature names is exported by
// some entry, documented, and every export has its docs.
//
// Alone, an entry may name a type whose home is another entry (DESIGN,
// round 5: "a name in at most one entry besides the root", "no cross-part
// re-export"). `deno doc --lint` on one entry reports such a name as
// `private-type-ref`; JSR documents the package as a whole and links it to
// its home, which the together run has proved exists. Every other
// diagnostic of an entry alone fails the check. The links are printed, so
// that a part's reach into the others stays visible.

if (import.meta.main) await main();

/** Lints the entries together, then each alone; exits 1 on a failure. */
async function main(): Promise<void> {
  const config = JSON.parse(await Deno.readTextFile("deno.json"));
  const entries = Object.values(config.exports as Record<string, string>);

  const together = await lint(entries);
  if (!together.success) {
    console.error(together.text);
    console.error("deno doc --lint fails over all entries together");
    Deno.exit(1);
  }

  const failed: string[] = [];
  for (const entry of entries) {
    const alone = await lint([entry]);
    if (alone.success) continue;
    const { links, others } = diagnostics(alone.text);
    if (others.length > 0 || links.length === 0) {
      failed.push(entry);
      console.error(alone.text);
      continue;
    }
    console.log(`${entry} names from other entries: ${links.join(", ")}`);
  }
  if (failed.length > 0) {
    console.error(`deno doc --lint fails on ${failed.join(", ")} linted alone`);
    Deno.exit(1);
  }
  console.log(
    `deno doc --lint: ${entries.length} entries together and each alone: ok`,
  );
}

/** Runs `deno doc --lint` over `files`, without colour. */
async function lint(
  files: readonly string[],
): Promise<{ success: boolean; text: string }> {
  const { success, stdout, stderr } = await new Deno.Command("deno", {
    args: ["doc", "--lint", ...files],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { success, text: decoder.decode(stdout) + decoder.decode(stderr) };
}

/**
 * Splits an entry's lint report into the names it takes from other entries
 * (`private-type-ref`) and every other diagnostic.
 */
export function diagnostics(
  text: string,
): { links: string[]; others: string[] } {
  const links = new Set<string>();
  const others: string[] = [];
  for (const line of text.split("\n")) {
    const kind = /^error\[([a-z-]+)\]: (.*)$/.exec(line);
    if (kind === null) {
      // Any other error line (a module that does not resolve, say) fails,
      // but for the summary that counts the diagnostics above it.
      const summary = /^error: Found \d+ documentation lint errors?\.$/;
      if (line.startsWith("error") && !summary.test(line)) others.push(line);
      continue;
    }
    const name = /references private type '([^']+)'/.exec(kind[2] ?? "");
    if (kind[1] === "private-type-ref" && name?.[1] !== undefined) {
      links.add(name[1]);
    } else {
      others.push(line);
    }
  }
  return { links: [...links].sort(), others };
}
