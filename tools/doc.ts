// `deno task doc`: the HTML reference of every entry of deno.json (`deno
// doc --html`), for reading offline: open reference/index.html. The folder
// is git-ignored; an argument names another. Needs --allow-read=deno.json
// and --allow-run=deno.

const out = Deno.args[0] ?? "reference";
const config = JSON.parse(await Deno.readTextFile("deno.json"));
const entries = Object.values(config.exports as Record<string, string>);
const { success } = await new Deno.Command("deno", {
  args: [
    "doc",
    "--html",
    `--name=${config.name}`,
    `--output=${out}`,
    ...entries,
  ],
  stdout: "inherit",
  stderr: "inherit",
}).output();
if (!success) Deno.exit(1);
console.log(
  `the reference of ${entries.length} entries is in ${out}/: open ${out}/index.html`,
);
