// `deno task cli`: runs the tool from a checkout with read and write
// permission for exactly the cache folder its help names
// ($PARTNER_API_CACHE_DIR, else $XDG_CACHE_HOME/partner-api, else
// $HOME/.cache/partner-api), which deno task's shell cannot choose itself,
// read permission for the file `--env-file` names, and read and write
// permission for the folder of the copy `sync --to` names (the copy, its
// lock and its checkpoint sit side by side there).
// Everything else passes through: arguments, terminal, Ctrl-C, exit code.

const env = (name: string) => Deno.env.get(name) || undefined;
// A path of the checkout, as the file system names it (a URL's path encodes a space as %20).
const inCheckout = (path: string) =>
  decodeURIComponent(new URL(path, import.meta.url).pathname);
// Where the task was typed (deno task sets INIT_CWD), and the checkout it runs in, this file's parent folder.
const checkout = inCheckout("..").replace(/(.)\/$/, "$1");
const typedIn = env("INIT_CWD");
const outside = typedIn !== undefined && typedIn !== checkout &&
  !typedIn.startsWith(`${checkout}/`);
const home = env("HOME");
const folder = env("PARTNER_API_CACHE_DIR") ??
  (env("XDG_CACHE_HOME")
    ? `${env("XDG_CACHE_HOME")}/partner-api`
    : undefined) ??
  (home ? `${home}/.cache/partner-api` : undefined);
// `--env-file F` (or `--env-file=F`): the tool reads F itself, so the task
// grants read on that one file too; `--to F`: the folder of F.
const flagValues = (flag: string) =>
  Deno.args.flatMap((arg, i) =>
    arg === flag && Deno.args[i + 1] !== undefined
      ? [Deno.args[i + 1]!]
      : arg.startsWith(`${flag}=`)
      ? [arg.slice(flag.length + 1)]
      : []
  );
// An empty one is the tool's to refuse: in a permission list it failed Deno's flag parsing, with a stack trace.
const envFiles = flagValues("--env-file").filter((path) => path !== "");
const copies = flagValues("--to").map((path) =>
  path.includes("/") ? path.slice(0, path.lastIndexOf("/")) || "/" : "."
);
const writable = [...(folder === undefined ? [] : [folder]), ...copies];
const readable = [...writable, ...envFiles];
// Deno's permission lists split on commas and cannot escape one: a path holding a comma cannot be granted alone.
const comma = readable.find((path) => path.includes(","));
if (comma !== undefined) {
  console.error(
    `deno task cli: cannot grant ${comma} alone, as Deno's permission lists take its comma for a separator: use a path without one, or run src/cli/mod.ts with permission flags of your own (--allow-read --allow-write grant every path)`,
  );
  Deno.exit(2);
}
const cacheFlags = [
  ...(readable.length === 0 ? [] : [`--allow-read=${readable.join(",")}`]),
  ...(writable.length === 0 ? [] : [`--allow-write=${writable.join(",")}`]),
];

const child = new Deno.Command("deno", {
  args: [
    "run",
    "--no-lock",
    "--allow-net",
    "--allow-env=PARTNER_API_*,XDG_CACHE_HOME,HOME",
    ...cacheFlags,
    inCheckout("../src/cli/mod.ts"),
    ...Deno.args,
  ],
  // The tool prints `deno task cli` in the commands it suggests only when run so: from a folder outside the
  // checkout, `deno task --cwd <checkout> cli` (typed there, `deno task cli` finds no deno.json: newcomer r258c).
  env: { PARTNER_API_CLI_TASK: outside ? checkout : "1" },
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
// Ctrl-C is the tool's to handle (a list closes its output first): pass it
// on, for a SIGINT sent to this process alone; a terminal sends it to both,
// and the tool takes a second one as the first. SIGTERM and SIGHUP too: a
// supervisor that signals this process alone left the tool running on.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  try {
    Deno.addSignalListener(signal, () => {
      try {
        child.kill(signal);
      } catch {
        // It has ended already.
      }
    });
  } catch {
    // Windows has SIGINT alone of these.
  }
}
Deno.exit((await child.status).code);
