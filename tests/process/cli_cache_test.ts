// Issue 22, the CLI's token cache as runs share it: one token for runs
// started together, and nothing at the cache's path can hang a run, fill its
// memory or leave a partial file behind. Issue 46: the folder is the user's
// alone, or the run is refused before it spends or waits for anything.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { storeKey } from "../../src/store/_key.ts";
import type { FakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { cli, cliCommand } from "./_cli_process.ts";
import { scratchDir } from "./_fleet.ts";
import { chattr, Command, processTest } from "../_processes.ts";

/** The permissions of `deno task cli`, with the cache in `folder`. */
function flags(folder: string): string[] {
  return [
    "--allow-net=127.0.0.1",
    "--allow-env=PARTNER_API_*,XDG_CACHE_HOME,HOME",
    `--allow-read=${folder}`,
    `--allow-write=${folder}`,
  ];
}

async function run(command: string, ...args: string[]): Promise<void> {
  ok((await new Command(command, { args }).output()).success);
}

/** Where the tool keeps `api`'s token in `folder`. */
async function cacheFile(api: FakePartnerApi, folder: string): Promise<string> {
  const key = await storeKey({
    url: api.environment.tokenUrl,
    audience: api.environment.audience,
    clientId: api.credentials.clientId,
    secret: api.credentials.clientSecret,
  });
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(key),
  );
  const hex = Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
  return `${folder}/${hex.slice(0, 32)}.token`;
}

processTest("runs started together on one cache spend one token", async () => {
  await using api = await startFakePartnerApi();
  const folder = await scratchDir();
  // A slow token endpoint: every run would send its own request meanwhile.
  api.injectTokenFaults(
    ...Array.from({ length: 8 }, () => ({ kind: "delay" as const, ms: 1000 })),
  );
  const env = { ...configFor(api), PARTNER_API_CACHE_DIR: folder };
  const runs = await Promise.all(
    Array.from({ length: 8 }, () => cli(flags(folder), ["token"], env)),
  );
  for (const run of runs) equal(run.code, 0, run.stderr);
  equal(api.tokenRequests, 1);
  const left = [...Deno.readDirSync(folder)].map((entry) => entry.name);
  equal(left.length, 1, `no lock or partial file left: ${left}`);
});

processTest(
  "a cache path that is not a small regular file is ignored with one notice, never waited on",
  async (t) => {
    const makers: [string, (path: string) => Promise<void>][] = [
      ["a folder", (path) => Deno.mkdir(path)],
      ["a huge file", (path) => Deno.writeFile(path, new Uint8Array(1 << 20))],
      ["a FIFO", (path) => run("mkfifo", path)],
    ];
    for (const [name, make] of makers) {
      await t.step(name, async () => {
        await using api = await startFakePartnerApi();
        const folder = await scratchDir();
        await make(await cacheFile(api, folder));
        const env = { ...configFor(api), PARTNER_API_CACHE_DIR: folder };
        const run = await cli(flags(folder), ["token"], env);
        equal(run.code, 0, run.stderr);
        const notices = run.stderr.split("\n").filter((l) =>
          l.includes("ignoring")
        );
        equal(notices.length, 1, run.stderr);
        equal(api.tokenRequests, 1);
      });
    }
  },
);

/**
 * Runs `script` (sh) as another local user, `nobody`; false when this
 * process cannot (only root may, and never with a password prompt).
 */
async function asAnotherUser(script: string): Promise<boolean> {
  try {
    const output = await new Command("su", {
      args: ["nobody", "-s", "/bin/sh", "-c", script],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    return output.success;
  } catch {
    return false;
  }
}

/** The ways a cache path can be another's to control, each set up in `parent` (mode 1777, as /tmp). */
const FOREIGN: [
  string,
  (parent: string, api: FakePartnerApi) => Promise<void>,
][] = [
  ["a folder another local user created first", async (parent) => {
    ok(await asAnotherUser(`mkdir '${parent}/cache'`));
  }],
  [
    "a file another local user created where the folder goes",
    async (parent) => {
      ok(await asAnotherUser(`touch '${parent}/cache'`));
    },
  ],
  ["a folder other users may write", async (parent) => {
    await Deno.mkdir(`${parent}/cache`);
    await Deno.chmod(`${parent}/cache`, 0o777);
  }],
  ["a link to a folder", async (parent) => {
    await Deno.mkdir(`${parent}/elsewhere`, { mode: 0o700 });
    await run("ln", "-s", `${parent}/elsewhere`, `${parent}/cache`);
  }],
  ["a token file another local user owns", async (parent, api) => {
    await Deno.mkdir(`${parent}/cache`, { mode: 0o700 });
    const file = await cacheFile(api, `${parent}/cache`);
    await Deno.writeFile(file, new Uint8Array(16), { mode: 0o600 });
    await Deno.chown(file, 65534, 65534);
  }],
  ["a link to /dev/zero as the token file", async (parent, api) => {
    await Deno.mkdir(`${parent}/cache`, { mode: 0o700 });
    await run("ln", "-s", "/dev/zero", await cacheFile(api, `${parent}/cache`));
  }],
];

processTest(
  "a cache folder or file another user made or may write, or a link, is refused in one line: 3 runs spend 0 tokens, and cache clear and logout change nothing",
  async (t) => {
    if (!(await asAnotherUser("true"))) {
      console.warn("skipped: only root can act as a second local user here");
      return;
    }
    for (const [name, setUp] of FOREIGN) {
      await t.step(name, async () => {
        await using api = await startFakePartnerApi();
        // Absolute: the other user's shell starts elsewhere.
        const parent = `${Deno.cwd()}/${await scratchDir()}`;
        await Deno.chmod(parent, 0o1777);
        await setUp(parent, api);
        const env = {
          ...configFor(api),
          PARTNER_API_CACHE_DIR: `${parent}/cache`,
        };
        for (let i = 0; i < 3; i++) {
          // Before the fix: 1 token, or one a run where no file could be
          // written (measured: 10 runs, 10 tokens), or a wait on a lock.
          const { code, stderr } = await cli(flags(parent), ["token"], env);
          equal(code, 2, stderr);
          equal(stderr.trimEnd().split("\n").length, 1, stderr);
          ok(stderr.includes(`${parent}/cache`), stderr);
        }
        equal(api.tokenRequests, 0);
        // r212a F2: cache clear and logout read and cleared there (exit 0).
        const before = await listing(parent);
        for (const command of [["cache", "clear"], ["logout"]]) {
          const { code, stderr } = await cli(flags(parent), command, env);
          equal(code, 2, stderr);
          equal(stderr.trimEnd().split("\n").length, 1, stderr);
          ok(stderr.includes(`${parent}/cache`), stderr);
        }
        equal((await listing(parent)).join(), before.join());
      });
    }
  },
);

/** The paths below `folder`, links not followed. */
async function listing(folder: string): Promise<string[]> {
  const paths: string[] = [];
  for await (const { name, isDirectory } of Deno.readDir(folder)) {
    paths.push(name);
    if (!isDirectory) continue;
    const below = await listing(`${folder}/${name}`);
    paths.push(...below.map((path) => `${name}/${path}`));
  }
  return paths.sort();
}

// r212c F1 and F2: a folder of the user's that is read-only (a mode, a mount) stopped every command (exit 2, "not
// writable by you"), and cache clear without permission to clear said so with exit 0, the tokens left.
processTest(
  "a cache folder no file can be made in runs uncached with one notice; cache clear and logout exit 2 there, and without permission, changing nothing",
  async () => {
    await using api = await startFakePartnerApi();
    const parent = await scratchDir();
    const folder = `${parent}/cache`;
    const env = { ...configFor(api), PARTNER_API_CACHE_DIR: folder };
    equal((await cli(flags(parent), ["token"], env)).code, 0); // cached
    const before = await listing(folder);
    const readOnly = flags(parent).filter((f) => !f.startsWith("--allow-w"));
    // r214a F3: not allowed to read where the cache is (HOME), it said "nothing to clear", exit 0.
    const { PARTNER_API_CACHE_DIR: _, ...unplaced } = env;
    const allowEnv = (names: string) =>
      flags(parent).map((f) => f.startsWith("--allow-env") ? names : f);
    // r215a F5: PARTNER_API_CACHE_DIR set but not readable, HOME's folder was cleared instead (exit 0).
    const elsewhere = { ...env, HOME: `${parent}/home` };
    for (const command of [["cache", "clear"], ["logout"]]) {
      const runs: [string[], Record<string, string>][] = [
        [readOnly, env],
        [allowEnv("--allow-env=PARTNER_API_*"), unplaced],
        [allowEnv("--allow-env=HOME"), elsewhere],
      ];
      for (const [given, vars] of runs) {
        const { code, stderr } = await cli(given, command, vars);
        equal(code, 2, stderr);
        equal(stderr.trimEnd().split("\n").length, 1, stderr);
      }
    }
    if (!await chattr("+i", folder)) { // root writes through any mode
      console.warn("skipped: chattr +i is not available here");
      return;
    }
    try {
      const { code, stderr } = await cli(flags(parent), ["token"], env);
      equal(code, 0, stderr);
      equal(stderr.trimEnd().split("\n").length, 1, stderr);
      ok(stderr.includes("running without the token cache"), stderr);
      equal(api.tokenRequests, 2);
      for (const command of [["cache", "clear"], ["logout"]]) {
        const cleared = await cli(flags(parent), command, env);
        equal(cleared.code, 2, cleared.stderr);
      }
    } finally {
      await chattr("-i", folder);
    }
    equal((await listing(folder)).join(), before.join());
  },
);

processTest(
  "the cache folder the tool creates is its user's alone (0700)",
  async () => {
    await using api = await startFakePartnerApi();
    const parent = await scratchDir();
    const env = { ...configFor(api), PARTNER_API_CACHE_DIR: `${parent}/cache` };
    const { code, stderr } = await cli(flags(parent), ["token"], env);
    equal(code, 0, stderr);
    equal((await Deno.lstat(`${parent}/cache`)).mode! & 0o777, 0o700);
    equal(api.tokenRequests, 1);
  },
);

processTest(
  "a cache write that cannot finish is reported once and leaves no partial file",
  async () => {
    await using api = await startFakePartnerApi();
    const folder = await scratchDir();
    // A folder where the token file goes: the finished file cannot be moved
    // there. (Tests run as root, so a read-only mode would not stop a write.)
    const file = await cacheFile(api, folder);
    await Deno.mkdir(file);
    const env = { ...configFor(api), PARTNER_API_CACHE_DIR: folder };
    const run = await cli(flags(folder), ["token"], env);
    equal(run.code, 0, run.stderr);
    const notices = run.stderr.split("\n").filter((l) =>
      l.includes("could not write")
    );
    equal(notices.length, 1, run.stderr);
    const left = [...Deno.readDirSync(folder)].map((entry) => entry.name);
    equal(`${folder}/${left.join()}`, file, "no partial file");
  },
);

processTest(
  "`deno task cli` caches where its help says, with XDG_CACHE_HOME or PARTNER_API_CACHE_DIR set",
  async (t) => {
    await using api = await startFakePartnerApi();
    for (const variable of ["XDG_CACHE_HOME", "PARTNER_API_CACHE_DIR"]) {
      await t.step(variable, async () => {
        const before = api.tokenRequests;
        const dir = await scratchDir();
        const env = { ...configFor(api), [variable]: `${Deno.cwd()}/${dir}` };
        for (let run = 0; run < 2; run++) {
          const { code, stderr } = await new Command("deno", {
            args: ["task", "--quiet", "cli", "token"],
            env,
            stdout: "null",
            stderr: "piped",
          }).output();
          equal(code, 0, new TextDecoder().decode(stderr));
        }
        equal(api.tokenRequests - before, 1, "the second run used the cache");
        await Deno.remove(dir, { recursive: true });
      });
    }
  },
);

processTest(
  "the 401 ledger lives in the cache file: five runs of `get admin` on a 401 path spend at most 2 token requests",
  async () => {
    await using api = await startFakePartnerApi();
    const folder = await scratchDir();
    const env = { ...configFor(api), PARTNER_API_CACHE_DIR: folder };
    for (let run = 0; run < 5; run++) {
      api.injectApiFaults({ kind: "status", status: 401 });
      const { code, stderr } = await cli(flags(folder), ["get", "admin"], env);
      equal(code, 1, stderr);
    }
    ok(api.tokenRequests <= 2, `${api.tokenRequests} token requests`);
  },
);

processTest(
  "a refused token request is remembered across runs: the next runs within the cooldown send nothing, under any load",
  async () => {
    await using api = await startFakePartnerApi();
    const folder = await scratchDir();
    const env = { ...configFor(api), PARTNER_API_CACHE_DIR: folder };
    // Refused once, asking an hour: however slow the runs, the next ones
    // come within it. (The 10 s default, clock driven: cli_test.ts.) Only
    // the first request is refused: a run that forgot would get a token.
    api.injectTokenFaults({ kind: "status", status: 403, retryAfter: 3600 });
    for (let run = 0; run < 3; run++) {
      const { code, stderr } = await cli(flags(folder), ["token"], env);
      equal(code, 1, stderr);
    }
    equal(api.tokenRequests, 1, "one request; the runs after it cool down");
  },
);

/**
 * Waits (polling) until a lock file is in `folder` and the token request
 * has reached `api`: the run holds the lock during its request.
 */
async function lockedRequest(api: FakePartnerApi, folder: string) {
  const locked = () =>
    [...Deno.readDirSync(folder)].some((entry) => entry.name.endsWith(".lock"));
  // However slow the machine: the test's deadline bounds the wait.
  while (!(api.tokenRequests === 1 && locked())) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A run of the tool, holding the lock during a token request that does not end. */
async function runHoldingLock(api: FakePartnerApi, folder: string) {
  api.injectTokenFaults({ kind: "delay", ms: 600_000 });
  const env = { ...configFor(api), PARTNER_API_CACHE_DIR: folder };
  const child = cliCommand(flags(folder), ["token"], env).spawn();
  await lockedRequest(api, folder);
  return { child, env };
}

processTest(
  "a run killed during its token request does not hold up the next: its stale lock is taken over, not waited out",
  async () => {
    await using api = await startFakePartnerApi();
    const folder = await scratchDir();
    const { child, env } = await runHoldingLock(api, folder);
    child.kill("SIGKILL");
    await child.output();
    // The lock goes stale 5 s after its owner died; a broken build waited
    // for the dead run's request (153 s), which the test's deadline names.
    const { code, stderr } = await cliCommand(flags(folder), ["token"], env)
      .output();
    equal(code, 0, new TextDecoder().decode(stderr));
    // Taken over, not waited out: a run that gave up waiting would request
    // alone and leave the dead run's lock where it was.
    const left = [...Deno.readDirSync(folder)].map((entry) => entry.name);
    equal(left.length, 1, `only the token file is left: ${left}`);
    ok(left[0]!.endsWith(".token"), `${left}`);
    equal(api.tokenRequests, 2);
  },
);

processTest(
  "Ctrl-C (SIGINT), SIGTERM or SIGHUP during a token request removes the run's lock, exit 130, 143 or 129 (SIGTERM killed the run and left it: the next run waited 4.8 s)",
  async () => {
    const stops = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;
    for (const [signal, exitCode] of Object.entries(stops)) {
      await using api = await startFakePartnerApi();
      const folder = await scratchDir();
      const { child } = await runHoldingLock(api, folder);
      const lock = [...Deno.readDirSync(folder)].find((entry) =>
        entry.name.endsWith(".lock")
      )!;
      // The lock names its owner.
      equal(
        Number(JSON.parse(Deno.readTextFileSync(`${folder}/${lock.name}`)).pid),
        child.pid,
      );
      child.kill(signal as Deno.Signal);
      const { code } = await child.output();
      equal(code, exitCode, signal);
      const left = [...Deno.readDirSync(folder)].map((entry) => entry.name);
      ok(
        !left.some((name) => name.endsWith(".lock")),
        `${signal} left: ${left}`,
      );
    }
  },
);

processTest(
  "cache clear --env-file F (and logout) removes the token of F's configuration alone; without it, every configuration's",
  async () => {
    await using one = await startFakePartnerApi();
    await using other = await startFakePartnerApi();
    const folder = await scratchDir();
    const files = await scratchDir();
    const permissions = [
      ...flags(folder).filter((flag) => !flag.startsWith("--allow-read")),
      `--allow-read=${folder},${files}`,
    ];
    const env = { PARTNER_API_CACHE_DIR: folder };
    const envFile = async (name: string, api: FakePartnerApi) => {
      const path = `${files}/${name}.env`;
      const lines = Object.entries(configFor(api)).map(([k, v]) => `${k}=${v}`);
      await Deno.writeTextFile(path, `${lines.join("\n")}\n`);
      return path;
    };
    const [oneEnv, otherEnv] = [
      await envFile("one", one),
      await envFile("other", other),
    ];
    const token = async (file: string) => {
      const result = await cli(permissions, ["token", "--env-file", file], env);
      equal(result.code, 0, result.stderr);
    };
    await token(oneEnv);
    await token(otherEnv);
    const cached = async (api: FakePartnerApi) =>
      await Deno.lstat(await cacheFile(api, folder)).then(
        () => true,
        () => false,
      );
    ok(await cached(one) && await cached(other));
    for (const command of [["cache", "clear"], ["logout"]]) {
      const narrowed = await cli(
        permissions,
        [...command, "--env-file", oneEnv],
        env,
      );
      equal(narrowed.code, 0, narrowed.stderr);
      equal(narrowed.stderr, "");
      ok(narrowed.stdout.startsWith("removed "), narrowed.stdout);
      equal(await cached(one), false, "the file's configuration: removed");
      equal(await cached(other), true, "another configuration's: kept");
      await token(oneEnv); // one token request more; the other's run none
      await token(otherEnv);
    }
    equal(one.tokenRequests, 3);
    equal(other.tokenRequests, 1);
    const every = await cli(permissions, ["logout"], env);
    equal(every.code, 0, every.stderr);
    ok(every.stdout.startsWith("removed 2 cached tokens"), every.stdout);
    ok(!await cached(one) && !await cached(other));
  },
);
