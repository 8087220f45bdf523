// `deno task coverage`: the coverage report, at least 90 % of lines and
// branches. On success it prints the total alone, so that the test task ends
// with its results; below the threshold, the whole table, to see where.
//
// Needs --allow-run=deno.

// Excluded by their whole address: a pattern like "tests/" alone would also
// match a checkout whose own path has it (a worktree named wt-fasttests).
const root = new URL("..", import.meta.url).href;
const under = (folder: string) =>
  `--exclude=^${(root + folder).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`;

const output = await new Deno.Command("deno", {
  args: [
    "coverage",
    "coverage",
    "--threshold=90",
    under("tests/"),
    under("examples/"),
    under(".test-tmp/"),
  ],
  env: { NO_COLOR: "1" }, // the total is read from the table
  stdout: "piped",
  stderr: "piped",
}).output();
const decoder = new TextDecoder();
const text = decoder.decode(output.stdout) + decoder.decode(output.stderr);
if (output.success) {
  // The "All files" row: | All files | branch | function | line |
  const total = text.split("\n")
    .find((line) => line.includes("All files"))
    ?.split("|").map((cell) => cell.trim()) ?? [];
  console.log(
    `coverage: ${total[4]} % of lines, ${total[2]} % of branches, ${
      total[3]
    } % of functions (at least 90 %)`,
  );
} else {
  console.log(text);
}
Deno.exit(output.code);
