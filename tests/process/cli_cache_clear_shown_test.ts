// Review r9 (1): `cache clear` and `logout` name the cache folder on standard
// output; a folder whose path held the client secret printed it whole, as no
// session was opened to know it. Permissions as `deno task cli` gives them.

import { equal, match, ok } from "node:assert/strict";
import { cli, cliSetup, TOKEN } from "./_cli_process.ts";
import { scratchDir } from "./_fleet.ts";
import { processTest } from "../_processes.ts";

/** Whether `text` holds a run of 12 characters of `value`, in any case. */
function holdsRun(text: string, value: string): boolean {
  const lower = text.toLowerCase();
  for (let at = 0; at + 12 <= value.length; at++) {
    if (lower.includes(value.slice(at, at + 12).toLowerCase())) return true;
  }
  return false;
}

/** A token endpoint handing out TOKEN; every other path an empty list. */
function serve(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (r) => {
    if (new URL(r.url).pathname !== "/token") return Response.json([]);
    const answer = { access_token: TOKEN, token_type: "Bearer" };
    return Response.json({ ...answer, expires_in: 3600 });
  });
}

processTest(
  "cache clear and logout never print the secret or the cached token their folder's path holds",
  async (t) => {
    await using server = serve();
    const scratch = await scratchDir();
    const secret = cliSetup(server, scratch).env.PARTNER_API_CLIENT_SECRET;
    for (const [what, value] of Object.entries({ secret, token: TOKEN })) {
      await t.step(what, async () => {
        const folder = `${scratch}/${what}-${value}`;
        const { env, flags } = cliSetup(server, folder);
        const { PARTNER_API_CLIENT_SECRET: _, ...others } = env;
        const file = `${scratch}/${what}.env`;
        await Deno.writeTextFile(file, `PARTNER_API_CLIENT_SECRET=${secret}\n`);
        const readFile = `--allow-read=${folder},${file}`;
        const fromFile = [
          ...flags.filter((f) => !f.startsWith("--allow-read")),
          readFile,
        ];
        const runs = [
          {
            flags,
            args: ["cache", "clear"],
            env,
            said: /^removed 1 cached token from /,
            code: 0,
          },
          {
            flags: fromFile,
            args: ["logout", "--env-file", file],
            env: others,
            said: /^removed 1 cached token of this/,
            code: 0,
          },
        ];
        // Not allowed to write the folder, the run may not open its cache (nor read the token): the secret alone. It
        // removes nothing: exit 2, said on standard error (r212c F1: exit 0).
        if (what === "secret") {
          const said =
            /^\S+: cannot clear the token cache: no write permission/;
          const args = ["logout"];
          runs.push({ flags: flags.slice(0, -1), args, env, said, code: 2 });
        }
        for (const run of runs) {
          equal((await cli(flags, ["token"], env)).code, 0); // TOKEN is cached
          const cleared = await cli(run.flags, run.args, run.env);
          equal(cleared.code, run.code, cleared.stderr);
          match(run.code ? cleared.stderr : cleared.stdout, run.said);
          ok(!holdsRun(cleared.stdout + cleared.stderr, value), cleared.stdout);
        }
      });
    }
  },
);
