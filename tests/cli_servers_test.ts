// The CLI reaches every OAuth server the library does (form bodies, HTTP
// Basic), and what --help says of --fields, --no-cache, --verbose and a
// mistyped variable name holds.

import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { configFor, run } from "./_cli_helpers.ts";
import { freshTarget } from "./_sync_fake.ts";
import { withFakeTimers } from "./_helpers.ts";
import { besideFake, inProcessFake } from "./_fast_setup.ts";
import { tried } from "../src/core/_check.ts";

Deno.test("--token-body form and PARTNER_API_TOKEN_BODY=form reach a server that takes form bodies only", async () => {
  await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
  const config = configFor(api);
  equal((await run(["token", "--no-cache"], config)).code, 1);
  const byVariable = await run(["token", "--no-cache"], {
    ...config,
    PARTNER_API_TOKEN_BODY: "form",
  });
  equal(byVariable.code, 0, byVariable.stderr);
  // The flag wins, even over a value the variable may not hold (then not read).
  for (const variable of ["json", "xml"]) {
    const byFlag = await run(["token", "--no-cache", "--token-body", "form"], {
      ...config,
      PARTNER_API_TOKEN_BODY: variable,
    });
    equal(byFlag.code, 0, byFlag.stderr);
  }
  // Refused as the flag sent it: the hint names the flag that chose, not the variable it overrode.
  const refused = await run(["token", "--no-cache", "--token-body", "json"], {
    ...config,
    PARTNER_API_TOKEN_BODY: "form",
  });
  equal(refused.code, 1);
  match(
    refused.stderr,
    /check --token-body \(json or form\) and PARTNER_API_CLIENT_AUTHENTICATION/,
  );
});

Deno.test("--client-authentication basic and PARTNER_API_CLIENT_AUTHENTICATION=basic reach a server that takes HTTP Basic only", async () => {
  await using api = await startFakePartnerApi();
  const { clientId, clientSecret } = api.credentials;
  const basic = `Basic ${btoa(`${clientId}:${clientSecret}`)}`;
  const seen: { authorization: string | null; body: string }[] = [];
  await using idp = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const body = await request.text();
      const authorization = request.headers.get("authorization");
      seen.push({ authorization, body });
      if (authorization !== basic || body.includes(clientSecret)) {
        return Response.json({ error: "invalid_client" }, { status: 401 });
      }
      return Response.json({
        access_token: "basic-token",
        expires_in: 3600,
        token_type: "Bearer",
      });
    },
  );
  const config = {
    ...configFor(api),
    PARTNER_API_TOKEN_URL: `http://127.0.0.1:${idp.addr.port}/oauth/token`,
  };
  equal((await run(["token", "--no-cache"], config)).code, 1);
  const byVariable = await run(["token", "--no-cache"], {
    ...config,
    PARTNER_API_CLIENT_AUTHENTICATION: "basic",
  });
  equal(byVariable.code, 0, byVariable.stderr);
  const byFlag = await run(
    ["token", "--no-cache", "--client-authentication", "basic"],
    config,
  );
  equal(byFlag.code, 0, byFlag.stderr);
  deepStrictEqual(
    seen.map(({ authorization }) => authorization === basic),
    [false, true, true],
  );
});

Deno.test("a bad --token-body, --client-authentication or variable value is a usage error before anything is sent", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  for (
    const [args, env] of [
      [["token", "--token-body", "xml"], config],
      [["token", "--client-authentication", "digest"], config],
      [["token"], { ...config, PARTNER_API_TOKEN_BODY: "xml" }],
      [["token"], { ...config, PARTNER_API_CLIENT_AUTHENTICATION: "digest" }],
    ] as const
  ) {
    const result = await run([...args, "--no-cache"], env);
    equal(result.code, 2, result.stderr);
  }
  equal(api.tokenRequests, 0);
});

Deno.test("--fields with a typo is a usage error with the nearest key, exit 2, nothing written in any format", async () => {
  await using api = await startFakePartnerApi({ items: { cardholders: 3 } });
  // A CSV header or JSON's "[]" was written before the refusal.
  for (const format of ["jsonl", "json", "csv", "table"]) {
    const typo = await run(
      ["list", "cardholders", "--fields", "cardholderID,nmae", "--no-cache"]
        .concat(["--format", format]),
      configFor(api),
    );
    equal(typo.code, 2);
    equal(typo.stdout, "", format);
    match(typo.stderr, /'nmae'; did you mean name\?/);
  }
  const right = await run(
    ["list", "cardholders", "--fields", "cardholderID,name", "--no-cache"],
    configFor(api),
  );
  equal(right.code, 0, right.stderr);
  equal(right.stdout.trim().split("\n").length, 3);
});

Deno.test("--fields reads an item's own fields only: an item without 'constructor' has none (Object's function was printed)", async () => {
  using api = inProcessFake();
  const items: Record<string, string>[] = [{ id: "a", constructor: "x" }, {
    id: "b",
  }];
  const answer = besideFake(api, () => Response.json({ items }));
  const config = configFor({ ...api, environment: answer.environment });
  const args = ["--format", "csv", "--fields", "id,constructor", "--no-cache"];
  const csv = await run(["list", "things", ...args], config, undefined, {
    fetch: answer.fetch,
  });
  equal(csv.code, 0, csv.stderr);
  equal(csv.stdout, "id,constructor\r\na,x\r\nb,\r\n");
});

Deno.test("--fields suggests no field it could not pick: a name with a comma, or spaces at its ends (attack r182 F7: 'a,b' was suggested for 'a', and could not be given)", async () => {
  using api = inProcessFake();
  const items = [{ id: "x", "a,b": 1, " c": 2, amount: 3 }];
  const answer = besideFake(api, () => Response.json({ items }));
  const config = configFor({ ...api, environment: answer.environment });
  for (const typo of ["a", "c"]) {
    const args = ["--fields", `id,${typo}`, "--no-cache"];
    const result = await run(["list", "things", ...args], config, undefined, {
      fetch: answer.fetch,
    });
    equal(result.code, 2, result.stderr);
    ok(!/did you mean (a,b| c)\?/.test(result.stderr), result.stderr);
  }
  // One it can pick is still suggested.
  const args = ["--fields", "id,amout", "--no-cache"];
  const near = await run(["list", "things", ...args], config, undefined, {
    fetch: answer.fetch,
  });
  equal(near.code, 2, near.stderr);
  match(near.stderr, /did you mean amount\?/);
});

Deno.test("--no-cache, as --help says: every run requests a token of its own", async () => {
  await using api = await startFakePartnerApi();
  for (let i = 0; i < 2; i++) {
    equal((await run(["token", "--no-cache"], configFor(api))).code, 0);
  }
  equal(api.tokenRequests, 2);
});

Deno.test("a mistyped variable name is named also when only PARTNER_API_* may be read: a character dropped or replaced (a replaced one went unnamed, as configFromEnv of a record names it)", async () => {
  await using api = await startFakePartnerApi();
  for (const typo of ["PARTNER_API_BASEURL", "PARTNER_API_BASE_URI"]) {
    // Every variable set, one under a mistyped name.
    const env = configFor(api);
    env[typo] = env.PARTNER_API_BASE_URL!;
    delete env.PARTNER_API_BASE_URL;
    const allowed = (name: string) => {
      if (!name.startsWith("PARTNER_API_")) throw new Error("NotCapable");
      return env[name];
    };
    const result = await run(["token", "--no-cache"], allowed);
    equal(result.code, 2);
    ok(
      result.stderr.includes(
        `${typo} is set: did you mean PARTNER_API_BASE_URL?`,
      ),
      result.stderr,
    );
  }
});

/** Asserts that no -v line shares a terminal line with a progress line. */
function apart(result: { code: number; stderr: string }) {
  equal(result.code, 0, result.stderr);
  // What a terminal shows of each line: the text after its last \r.
  const shown = result.stderr.split("\n").map((line) =>
    line.slice(line.lastIndexOf("\r") + 1).replaceAll("\x1b[K", "")
  );
  ok(shown.some((line) => line.startsWith("GET ")), result.stderr);
  ok(result.stderr.includes("items/s"), result.stderr);
  for (const line of shown) {
    ok(!(line.includes("items/s") && line.includes("GET ")), line);
  }
}

Deno.test("-v lines never share a line with the progress line: list and sync", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 30 } });
  apart(
    await run(
      ["list", "transactions", "--limit", "5", "-v", "--no-cache"],
      configFor(api),
      { stdout: false, stderr: true },
    ),
  );
  // Enough for several windows, whatever size the sync finds.
  await using big = await startFakePartnerApi({
    items: { transactions: 3000 },
  });
  const target = await freshTarget("cli-servers", "copy.jsonl");
  apart(
    await run(
      ["sync", "transactions", "--to", target, "--limit", "5", "-v"],
      configFor(big),
      { stdout: false, stderr: true },
    ),
  );
});

Deno.test("--help's examples answer from the fake: `get cards/ch_000001 --pci` (200) and `token --show-token`", async () => {
  await using api = await startFakePartnerApi();
  const help = (await run(["--help"])).stdout;
  const example = /e\.g\. (get [^(]+?)\s*\(/.exec(help)![1]!;
  const get = await run(
    [...example.split(" "), "--no-cache"],
    configFor(api),
  );
  equal(get.code, 0, get.stderr);
  equal(JSON.parse(get.stdout).cardholderID, "ch_000001");
  ok((await run(["token", "--help"])).stdout.includes("token --show-token"));
  const token = await run(
    ["token", "--show-token", "--no-cache"],
    configFor(api),
  );
  equal(token.code, 0, token.stderr);
  equal(token.stdout.trim().split("\n").length, 1);
});

Deno.test("the optional variables count as unset where they may not be read (--allow-env naming the six)", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  const sixOnly = (name: string) => {
    if (!Object.hasOwn(config, name)) throw new Error("NotCapable");
    return config[name];
  };
  const result = await run(["token", "--no-cache"], sixOnly);
  equal(result.code, 0, result.stderr);
});

Deno.test("get and sync drop an API error answer that holds a run of the client secret, as the library does (the client sees the credentials)", async () => {
  await using api = await startFakePartnerApi();
  const secret = api.credentials.clientSecret;
  // An API that answers 403 repeating part of the secret: no whole form of it, which only a run finds.
  const part = secret.slice(1, -1);
  await using echo = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(`denied: ${part}`, { status: 403 }),
  );
  const at = `http://127.0.0.1:${echo.addr.port}/api/`;
  const config = { ...configFor(api), PARTNER_API_BASE_URL: at };
  const target = await freshTarget("cli", "secret-run");
  for (
    const args of [
      ["get", "organizations"],
      ["sync", "organizations", "--to", `${target}.db`],
    ]
  ) {
    const result = await run([...args, "--no-cache"], config);
    equal(result.code, 1, result.stderr);
    ok(part.length >= 12 && !result.stderr.includes(part), result.stderr);
  }
});

Deno.test("a short client secret ('secret') is not redacted out of the tool's own words: a 401's hint names PARTNER_API_CLIENT_SECRET whole", async () => {
  await using api = await startFakePartnerApi();
  const config = { ...configFor(api), PARTNER_API_CLIENT_SECRET: "secret" };
  const result = await run(["token", "--no-cache"], config);
  equal(result.code, 1, result.stderr);
  match(result.stderr, /PARTNER_API_CLIENT_SECRET/);
  equal(result.stderr.includes("[client_secret]"), false, result.stderr);
});

Deno.test("get exits 1 (the network's failure), not 2 (the caller's), when the connection drops while the answer's body comes", async () => {
  await using api = await startFakePartnerApi();
  api.injectApiFaults({ kind: "drop" });
  const result = await run(
    ["get", "organizations", "--no-cache"],
    configFor(api),
  );
  equal(result.code, 1, result.stderr);
  match(result.stderr, /broke off/);
});

/** `get one` on fake timers (in steps of `step` ms) against an in-process fake whose API answers with `body`. */
function getOnFakeTimers(body: () => ReadableStream, step: number) {
  return withFakeTimers(async (timers) => {
    using api = inProcessFake({ now: () => timers.now });
    const answer = besideFake(api, () =>
      new Response(body(), {
        headers: { "content-type": "application/json" },
      }));
    const config = configFor({ ...api, environment: answer.environment });
    let done = false;
    const running = run(["get", "one", "--no-cache"], config, undefined, {
      fetch: answer.fetch,
      now: () => timers.now,
    }).finally(() => done = true);
    while (!done) await timers.tickAsync(step);
    return await running;
  });
}

Deno.test("get exits 1 when the answer's body stalls after its headers: the body's read is timed as a list page's (it waited for ever)", async () => {
  const streams: ReadableStreamDefaultController[] = [];
  const stalling = () =>
    new ReadableStream({
      start(stream) {
        stream.enqueue(new TextEncoder().encode("{"));
        streams.push(stream);
      },
    });
  const result = await getOnFakeTimers(stalling, 100);
  for (const stream of streams) tried(() => stream.close());
  equal(result.code, 1, result.stderr);
  match(result.stderr, /broke off: no byte of the answer for 30000 ms/);
  equal(streams.length, 1);
});

Deno.test("get reads a slow, steady body through: 30 s is the wait for the next byte, not for the whole (a 60 s download failed)", async () => {
  const parts = ['{"items":', "[1,2,", "3]}"];
  const steady = () =>
    new ReadableStream({
      async pull(stream) {
        await new Promise((resolve) => setTimeout(resolve, 20_000));
        const part = parts.shift();
        if (part === undefined) stream.close();
        else stream.enqueue(new TextEncoder().encode(part));
      },
    });
  const result = await getOnFakeTimers(steady, 1000);
  equal(result.code, 0, result.stderr);
  equal(result.stdout, '{"items":[1,2,3]}');
});

Deno.test("get hides the access token where the API's error answer repeats it, with -v and --pci too", async () => {
  await using api = await startFakePartnerApi();
  const sent: string[] = [];
  // An API that answers 403 and repeats the request's Authorization header.
  await using echo = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const authorization = request.headers.get("authorization") ?? "";
      sent.push(authorization.replace(/^Bearer /, ""));
      return new Response(`denied for ${authorization}`, { status: 403 });
    },
  );
  const at = `http://127.0.0.1:${echo.addr.port}/api/`;
  const config = {
    ...configFor(api),
    PARTNER_API_BASE_URL: at,
    PARTNER_API_PCI_BASE_URL: at,
  };
  for (const flags of [[], ["-v"], ["--pci"]]) {
    const result = await run(
      ["get", "organizations", "--no-cache", ...flags],
      config,
    );
    equal(result.code, 1, result.stderr);
    match(result.stderr, /answered 403/);
    const token = sent.at(-1)!;
    ok(token.length > 8 && !result.stderr.includes(token), result.stderr);
  }
  equal(sent.length, 3);
});

Deno.test("a 401 on a list or a get names the command that clears the cached token, with the run's --env-file (a restarted fake knows no token it issued; the line said only to clear the cache; get's named no --env-file: r212c F4)", async () => {
  await using api = await startFakePartnerApi();
  const dir = await Deno.makeTempDir({ dir: ".test-tmp" });
  const env = { ...configFor(api), PARTNER_API_CACHE_DIR: dir };
  equal((await run(["token"], env)).code, 0);
  const file = `${dir}/fake.env`;
  const lines = Object.entries(configFor(api)).map(([k, v]) => `${k}=${v}\n`);
  await Deno.writeTextFile(file, lines.join(""));
  const cache = { PARTNER_API_CACHE_DIR: dir };
  // Refused, and refused again after the one renewal an hour allows.
  const refused = { kind: "status", status: 401 } as const;
  for (const command of [["list", "organizations"], ["get", "organizations"]]) {
    api.injectApiFaults(refused, refused);
    const failed = await run(command, env);
    equal(failed.code, 1);
    match(
      failed.stderr,
      /; partner-api cache clear removes the cached token\n$/,
    );
    api.injectApiFaults(refused, refused);
    const named = await run([...command, "--env-file", file], cache);
    equal(named.code, 1);
    ok(
      named.stderr.endsWith(
        `cache clear --env-file ${file} removes the cached token\n`,
      ),
      named.stderr,
    );
  }
  await Deno.remove(dir, { recursive: true });
});

// r215a F6: c66193a2 took a path with a leading space for none (exit 2); it read the list before, as it does again.
Deno.test("a path with a space before it is still a path: get and list read it", async () => {
  await using api = await startFakePartnerApi();
  for (
    const command of [["get", " organizations"], ["list", " organizations"]]
  ) {
    const result = await run(command, configFor(api));
    equal(result.code, 0, result.stderr);
  }
});
