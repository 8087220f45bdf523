// Review of fd7c0a02 (the CLI's failure line and the cached token): a token
// percent-encoded in `get`'s address (the library's echo cut mid-escape) or
// twice in a flag was shown; a short cached token ("e") cut ordinary words; and
// a refused line made the cache folder, even with --no-cache. Permissions as
// `deno task test:process` gives them.

import { equal, ok } from "node:assert/strict";
import { cli, cliSetup as setup, TOKEN } from "./_cli_process.ts";
import { scratchDir } from "./_fleet.ts";
import { processTest } from "../_processes.ts";

/** Each character of `text` as a %XX escape. */
const percentEncoded = (text: string) =>
  [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .join("");

/** `text` with every escape decoded, one level (a cut escape left as it is). */
const decoded = (text: string) =>
  text.replace(
    /%([0-9a-f]{2})/gi,
    (_, hex) => String.fromCharCode(parseInt(hex, 16)),
  );

/** Whether `text`, as is or decoded once or twice, holds a run of 12 characters of `token`, in any case. */
function holdsRun(text: string, token = TOKEN): boolean {
  const forms = [text, decoded(text), decoded(decoded(text))]
    .map((form) => form.toLowerCase());
  for (let at = 0; at + 12 <= token.length; at++) {
    const run = token.slice(at, at + 12).toLowerCase();
    if (forms.some((form) => form.includes(run))) return true;
  }
  return false;
}

/** A token endpoint handing out `token`; every other path an empty list. */
function serve(token: string): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (r) => {
    if (new URL(r.url).pathname !== "/token") return Response.json([]);
    const answer = { access_token: token, token_type: "Bearer" };
    return Response.json({ ...answer, expires_in: 3600 });
  });
}

processTest("a cached token percent-encoded is never printed", async (t) => {
  await using server = serve(TOKEN);
  const { env, flags } = setup(server, await scratchDir());
  equal((await cli(flags, ["token"], env)).code, 0);
  const once = percentEncoded(TOKEN);
  const refused = [
    ["get", `http://evil.example/x?q=${once}`],
    ["list", "things", "--sort-direction", once.replaceAll("%", "%25")],
  ];
  for (const args of refused) {
    await t.step(args.join(" ").slice(0, 40), async () => {
      const run = await cli(flags, args, env);
      equal(run.code, 2);
      ok(!holdsRun(run.stderr + run.stdout), run.stderr);
    });
  }
});

processTest("a short cached token changes no refusal's line", async () => {
  await using server = serve("e");
  const { env, flags } = setup(server, await scratchDir());
  const refused = [
    ["get", "http://other.example/x"],
    ["list", "things", "--limit", "0"],
  ];
  const before = await Promise.all(
    refused.map((args) => cli(flags, args, env)),
  );
  equal((await cli(flags, ["token"], env)).code, 0);
  for (const [i, args] of refused.entries()) {
    const after = await cli(flags, args, env);
    equal(after.code, 2);
    equal(after.stderr, before[i]!.stderr); // nothing of it hidden: "e" is in every other word
  }
});

processTest("a refused line makes no cache folder", async (t) => {
  await using server = serve(TOKEN);
  const scratch = await scratchDir();
  const lines = [
    ["list", "things", "--no-cache", "--sort-direction", "sideways"],
    ["get", "http://other.example/x", "--no-cache"],
    ["list", "things", "--sort-direction", "sideways"],
  ];
  for (const [i, args] of lines.entries()) {
    await t.step(args.join(" "), async () => {
      const folder = `${scratch}/cache-${i}`;
      const { env, flags } = setup(server, folder);
      equal((await cli(flags, args, env)).code, 2);
      const made = await Deno.lstat(folder).then(() => true, () => false);
      equal(made, false);
    });
  }
});
