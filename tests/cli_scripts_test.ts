// Issue 18: the tool for scripts: formats and fields, get, JSON for token
// and quota, Ctrl-C leaving whole output, --env-file, cache clear,
// completion. Assertions read structure (parsed JSON, CSV rows), not prose.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { configFor, run } from "./_cli_helpers.ts";
import { loopbackApi } from "./_loopback_api.ts";
import { csvField } from "../src/cli/_list.ts";
import { parseEnvFile } from "../src/cli/_env_file.ts";
import { freshTarget } from "./_sync_fake.ts";
import { escapeControls } from "../src/core/_controls.ts";

Deno.test("--format csv writes RFC 4180 with one header; --fields picks columns in every format", async () => {
  await using api = await startFakePartnerApi({ items: { organizations: 5 } });
  const config = configFor(api);
  const csv = await run(
    ["list", "organizations", "--format", "csv", "--limit", "2", "--no-cache"],
    config,
  );
  equal(csv.code, 0, csv.stderr);
  const lines = csv.stdout.split("\r\n").filter((line) => line !== "");
  equal(lines.length, 6, "a header and five rows");
  ok(lines[0]!.split(",").includes("organizationID"));
  const picked = await run([
    "list",
    "organizations",
    "--format",
    "csv",
    "--fields",
    "organizationID,companyName",
    "--no-cache",
  ], config);
  equal(picked.stdout.split("\r\n")[0], "organizationID,companyName");
  const jsonl = await run(
    ["list", "organizations", "--fields", "organizationID", "--no-cache"],
    config,
  );
  const items = jsonl.stdout.trim().split("\n").map((line) => JSON.parse(line));
  deepStrictEqual(Object.keys(items[0]), ["organizationID"]);
  equal(items.length, 5);
});

Deno.test("csvField() quotes what RFC 4180 says and escapes control characters", () => {
  equal(csvField("plain"), "plain");
  equal(csvField('say "hi", twice'), '"say ""hi"", twice"');
  equal(csvField("line\nbreak"), "line\\u000abreak");
  equal(csvField(undefined), "");
  equal(csvField({ a: 1 }), '"{""a"":1}"');
  equal(csvField(3), "3");
});

Deno.test("--format json for token and quota prints one object, without the token unless asked", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
  const config = configFor(api);
  const token = await run(["token", "--format", "json", "--no-cache"], config);
  equal(token.code, 0, token.stderr);
  const object = JSON.parse(token.stdout);
  equal(object.accessToken, undefined);
  equal(object.tokenRequests, 1);
  ok(object.expiresIn > 0);
  ok(object.quota.some((b: { bucket: string }) => b.bucket === "per_hour"));
  const shown = JSON.parse(
    (await run(
      ["token", "--format", "json", "--show-token", "--no-cache"],
      config,
    )).stdout,
  );
  equal(typeof shown.accessToken, "string");
  const quota = JSON.parse(
    (await run(["quota", "--format", "json", "--no-cache"], config)).stdout,
  );
  ok(Array.isArray(quota.buckets) && quota.buckets.length > 0);
  const refused = await run(["token", "--format", "csv"], config);
  equal(refused.code, 2);
});

Deno.test("get prints one resource: raw off a terminal, pretty JSON on one; non-2xx exits 1 with the status", async () => {
  await using api = await startFakePartnerApi({ items: { organizations: 3 } });
  const config = configFor(api);
  const raw = await run(["get", "organizations?limit=2", "--no-cache"], config);
  equal(raw.code, 0, raw.stderr);
  equal(JSON.parse(raw.stdout).organizations.length, 2);
  const pretty = await run(
    ["get", "organizations?limit=2", "--no-cache"],
    config,
    { stdout: true, stderr: true },
  );
  ok(pretty.stdout.includes('\n  "organizations"'), "indented on a terminal");
  const card = await run(
    ["get", "cards/ch_000001", "--pci", "--no-cache"],
    config,
  );
  equal(card.code, 0, card.stderr);
  equal(JSON.parse(card.stdout).cardholderID, "ch_000001");
  const missing = await run(
    ["get", "organizations/nope", "--no-cache"],
    config,
  );
  equal(missing.code, 1);
  ok(missing.stderr.includes("404"), missing.stderr);
  equal(missing.stdout, "");
});

Deno.test("Ctrl-C during --format json leaves a closed array and exits 130", async () => {
  await using api = await startFakePartnerApi({
    items: { transactions: 500 },
    latency: 5,
  });
  let interrupt: (() => void) | undefined;
  let written = 0;
  const result = { stdout: "" };
  const stdout = {
    isTerminal: false,
    write(text: string) {
      result.stdout += text;
      // Ctrl-C once a few items are out.
      if (++written === 5) interrupt?.();
    },
  };
  const config = configFor(api);
  const done = await run(
    ["list", "transactions", "--format", "json", "--limit", "10", "--no-cache"],
    config,
    { stdout: false, stderr: false },
    {
      stdout,
      onInterrupt: (stop: () => void) => {
        interrupt = stop;
        return () => interrupt = undefined;
      },
    },
  );
  equal(done.code, 130, done.stderr);
  const items = JSON.parse(result.stdout);
  ok(Array.isArray(items) && items.length >= 4 && items.length < 500);
});

Deno.test("--format json on a terminal says the count once, at the end", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 120 } });
  const result = await run(
    ["list", "transactions", "--format", "json", "--limit", "10", "--no-cache"],
    configFor(api),
    { stdout: true, stderr: true },
  );
  equal(result.code, 0);
  equal(JSON.parse(result.stdout).length, 120);
  // One count, once the array is closed (the terminal test reads the screen).
  equal(result.stderr.split("items/s").length, 2, result.stderr);
});

Deno.test("a table cuts a later, longer value to its column, and names a key first seen later", async () => {
  await using api = await startFakePartnerApi({ items: { organizations: 4 } });
  const result = await run(
    [
      "list",
      "organizations",
      "--format",
      "table",
      "--limit",
      "2",
      "--no-cache",
    ],
    configFor(api),
  );
  equal(result.code, 0, result.stderr);
  const lines = result.stdout.trimEnd().split("\n");
  const width = Math.max(...lines.slice(0, 3).map((line) => line.length));
  for (const line of lines) ok(line.length <= width, line);
});

Deno.test("--env-file reads the configuration; the environment wins; a missing file is a usage error", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  const file = Object.entries(config).map(([k, v]) => `${k}="${v}"`).join("\n");
  const files: Record<string, string> = { ".env": `# comment\n${file}\n` };
  const readTextFile = (path: string) =>
    files[path] === undefined
      ? Promise.reject(new Deno.errors.NotFound(path))
      : Promise.resolve(files[path]!);
  const ok1 = await run(
    ["token", "--env-file", ".env", "--no-cache"],
    {},
    undefined,
    { readTextFile },
  );
  equal(ok1.code, 0, ok1.stderr);
  const missing = await run(
    ["token", "--env-file", "nope.env", "--no-cache"],
    {},
    undefined,
    { readTextFile },
  );
  equal(missing.code, 2);
  deepStrictEqual(
    [...parseEnvFile("export A=1\nB='x # y'\nC=z # note\n# D=4\nE=\"a\\nb\"")],
    [["A", "1"], ["B", "x # y"], ["C", "z"], ["E", "a\nb"]],
  );
});

Deno.test("a failure is printed without the client secret read from --env-file, as from the environment (a list echoing it in item ids out of order)", async () => {
  const secret = "s3cr3t-env-file-echo-4711";
  await using api = loopbackApi(
    "AT-env-file-1",
    () => Response.json([{ thingID: "b" }, { thingID: `a-${secret}` }]),
  );
  const credentials = { clientId: "partner-client-9", clientSecret: secret };
  const config = configFor({ environment: api.environment, credentials });
  const file = Object.entries(config).map(([k, v]) => `${k}=${v}`).join("\n");
  // Its folder made here: run alone in a fresh clone, no test before it had (r176a F1).
  const to = await freshTarget("cli-env-file-echo", "copy.jsonl");
  const failed = await run(
    ["sync", "things", "--to", to, "--id", "thingID", "--env-file", ".env"],
    {},
    undefined,
    { readTextFile: () => Promise.resolve(file) },
  );
  equal(failed.code, 1, failed.stderr);
  ok(!failed.stderr.includes(secret), failed.stderr);
  await Deno.remove(to).catch(() => {});
});

Deno.test("a command line refused before --env-file is read never prints the secret the file holds, whatever flag or word it was pasted into, nor where the run may not read the file (r212c F3: the flag's line quoted it)", async () => {
  const secret = "s3cr3t-pasted-flag-5150";
  const file = `PARTNER_API_CLIENT_SECRET=${secret}\n`;
  const readTextFile = (path: string) =>
    path === "ci.env" ? Promise.resolve(file) : Promise.reject(
      new (path === "locked.env" ? Deno.errors.NotCapable : Error)(path),
    );
  const sync = ["sync", "things", "--to", "a.db"];
  const pasted = [
    ...["sweep", "limit", "max-deletes", "priority", "deletes", "max-duration"]
      .map((flag) => [...sync, `--${flag}`, `x${secret}`]),
    [...sync, "--sort-direction", secret],
    ["sync", "things", "--to", `a.${secret}`],
    [...sync, `--${secret}`],
    ["list", "things", "--format", secret],
    ["list", "things", "--since", `creationDate=${secret}`],
    [secret],
  ];
  for (const args of pasted) {
    const files = [["--env-file", "ci.env"], ["--env-file=ci.env"]];
    for (const named of [...files, ["--env-file", "locked.env"]]) {
      const refused = await run([...args, ...named], {}, undefined, {
        readTextFile,
      });
      equal(refused.code, 2, refused.stderr);
      equal(refused.stdout, "");
      equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
      ok(!refused.stderr.includes(secret), refused.stderr);
    }
  }
});

Deno.test("completion prints a script for each shell; cache clear and logout say what they removed", async () => {
  for (const shell of ["bash", "zsh", "fish"]) {
    const script = await run(["completion", shell], {});
    equal(script.code, 0);
    ok(script.stdout.includes("partner-api"));
    ok(script.stdout.includes("--max-items"));
  }
  equal((await run(["completion", "tcsh"], {})).code, 2);
  // The word that is wrong is the one named (r182 F8: `bash`, for `bash extra`).
  const extra = await run(["completion", "bash", "extra"], {});
  equal(extra.code, 2);
  ok(extra.stderr.includes(": received extra"), extra.stderr);
  let cleared = 0;
  const clearCache = () => Promise.resolve(`removed ${++cleared} cached token`);
  for (const args of [["cache", "clear"], ["logout"]]) {
    const result = await run(args, {}, undefined, { clearCache });
    equal(result.code, 0);
  }
  equal(cleared, 2);
  equal((await run(["cache", "wipe"], {})).code, 2);
});

Deno.test("CSV cells that would start a formula are prefixed with ' (OWASP), numbers are not", () => {
  for (const formula of ["=HYPERLINK(1)", "+cmd", "-x", "@SUM(A1)", "=1+1"]) {
    equal(csvField(formula), `'${formula}`);
  }
  for (const number of ["-5", "+33", "-12.50", -3, "1e5"]) {
    equal(csvField(number), String(number));
  }
  equal(csvField("plain=text"), "plain=text");
  equal(csvField('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
});

// r177: the class first taken (every format character) escaped signs Arabic writes (U+0600, the end of ayah) and the
// selectors fonts draw variants by.
Deno.test("text people read, in any script, with emoji and their selectors, passes the escaping unchanged", () => {
  const read = '❤️ مرحبا ؀١٢ ۝ नमस्ते 葛 ᠋ ok, "quoted"';
  equal(escapeControls(read), read);
});

Deno.test("invisible direction, zero-width, tag and filler characters from the service are escaped in every format, headers and keys too", async () => {
  await using api = await startFakePartnerApi();
  const invisible = [
    ..."\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff",
    ..."\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    // r176b F2: a soft hyphen, tag characters spelling hidden text, a filler, a variation selector came through raw.
    ..."\u00ad\u{e0041}\u{e0042}\u3164\u{e0100}",
  ];
  const hidden = invisible.join("");
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json([{ [`name${hidden}`]: `evil${hidden}`, id: 1 }]),
  );
  const config = {
    ...configFor(api),
    PARTNER_API_BASE_URL: `http://127.0.0.1:${server.addr.port}/api/`,
  };
  for (const format of ["table", "csv", "json", "jsonl"]) {
    const result = await run(
      ["list", "organizations", "--format", format, "--no-cache"],
      config,
    );
    equal(result.code, 0, result.stderr);
    for (const char of invisible) {
      ok(
        !result.stdout.includes(char),
        `${format}: U+${char.charCodeAt(0).toString(16)}`,
      );
    }
  }
  const csv = await run(
    [
      "list",
      "organizations",
      "--format",
      "csv",
      "--fields",
      `name${hidden}`,
      "--no-cache",
    ],
    config,
  );
  ok(invisible.every((char) => !csv.stdout.includes(char)), csv.stdout);
});

// r176a F2: a card asked of the main base got a bare 404, with no word of --pci.
Deno.test("get of a card without --pci answers 404 with the flag to add; with it, the card", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  const path = "cards/ch_000001";
  const main = await run(["get", path, "--no-cache"], config);
  equal(main.code, 1, main.stderr);
  ok(main.stderr.includes("--pci"), main.stderr);
  const pci = await run(["get", path, "--pci", "--no-cache"], config);
  equal(pci.code, 0, pci.stderr);
});

// r176a F4: a variable missing from the file --env-file named was hinted "--env-file .env reads a file".
Deno.test("a variable set neither in --env-file's file nor the environment is said to be missing from both (exit 2)", async () => {
  await using api = await startFakePartnerApi();
  const { PARTNER_API_CLIENT_SECRET: _, ...rest } = configFor(api);
  const file = Object.entries(rest).map(([k, v]) => `${k}=${v}`).join("\n");
  const result = await run(
    ["token", "--env-file", "ci.env", "--no-cache"],
    {},
    undefined,
    { readTextFile: () => Promise.resolve(file) },
  );
  equal(result.code, 2, result.stderr);
  ok(result.stderr.includes("PARTNER_API_CLIENT_SECRET"), result.stderr);
  ok(result.stderr.includes("--env-file ci.env"), result.stderr);
});
