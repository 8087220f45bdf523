// `deno task check`: `deno doc --lint` over every entry of deno.json together,
// then over each entry alone, as a JSR user meets it (an entry linted with
// others can borrow their exports and pass where it alone fails). Needs
// --allow-read=deno.json and --allow-run=deno.
//
// Alone, an entry must export every type its signatures name, so it
// re-exports (`export type`) the ones whose home is another entry;
// tools/doors.ts fails on a value in two entries besides the root, and on a
// type an entry exports that nothing of its own names.

const config = JSON.parse(await Deno.readTextFile("deno.json"));
const entries = Object.values(config.exports as Record<string, string>);
const failed: string[] = [];
for (const files of [entries, ...entries.map((entry) => [entry])]) {
  const { success, stdout, stderr } = await new Deno.Command("deno", {
    args: ["doc", "--lint", ...files],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (success) continue;
  failed.push(files.length === 1 ? files[0]! : "all entries together");
  const decoder = new TextDecoder();
  console.error(decoder.decode(stdout) + decoder.decode(stderr));
}
if (failed.length > 0) {
  console.error(`deno doc --lint fails on ${failed.join(", ")}`);
  Deno.exit(1);
}
console.log(
  `deno doc --lint: ${entries.length} entries together and each alone: ok`,
);
