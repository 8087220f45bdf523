// `deno task check`: `deno doc --lint` on every entry of deno.json alone, as
// a JSR user meets it (one entry linted with others can borrow their
// exports and pass where it alone fails). Needs --allow-read=deno.json
// and --allow-run=deno.

const config = JSON.parse(await Deno.readTextFile("deno.json"));
const entries = Object.values(config.exports as Record<string, string>);
const failed: string[] = [];
for (const entry of entries) {
  const { success, stdout, stderr } = await new Deno.Command("deno", {
    args: ["doc", "--lint", entry],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (success) continue;
  failed.push(entry);
  const decoder = new TextDecoder();
  console.error(decoder.decode(stdout) + decoder.decode(stderr));
}
if (failed.length > 0) {
  console.error(`deno doc --lint fails on ${failed.join(", ")} linted alone`);
  Deno.exit(1);
}
console.log(`deno doc --lint: ${entries.length} entries, each alone: ok`);
