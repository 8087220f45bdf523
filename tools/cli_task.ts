// `deno task cli`: runs the tool from a checkout with read and write
// permission for exactly the cache folder its help names
// ($PARTNER_API_CACHE_DIR, else $XDG_CACHE_HOME/partner-api, else
// $HOME/.cache/partner-api), which deno task's shell cannot choose itself.
// Everything else passes through: arguments, terminal, Ctrl-C, exit code.

const env = (name: string) => Deno.env.get(name) || undefined;
const home = env("HOME");
const folder = env("PARTNER_API_CACHE_DIR") ??
  (env("XDG_CACHE_HOME")
    ? `${env("XDG_CACHE_HOME")}/partner-api`
    : undefined) ??
  (home ? `${home}/.cache/partner-api` : undefined);
const cacheFlags = folder === undefined
  ? []
  : [`--allow-read=${folder}`, `--allow-write=${folder}`];

const child = new Deno.Command("deno", {
  args: [
    "run",
    "--no-lock",
    "--allow-net",
    "--allow-env=PARTNER_API_*,XDG_CACHE_HOME,HOME",
    ...cacheFlags,
    new URL("../src/cli/mod.ts", import.meta.url).pathname,
    ...Deno.args,
  ],
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
// Ctrl-C is the tool's to handle (a list closes its output first): pass it
// on, for a SIGINT sent to this process alone; a terminal sends it to both,
// and the tool takes a second one as the first.
Deno.addSignalListener("SIGINT", () => {
  try {
    child.kill("SIGINT");
  } catch {
    // It has ended already.
  }
});
Deno.exit((await child.status).code);
