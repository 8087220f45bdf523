// The runtime matrix: the same scenario (scenario.mjs) on Deno, Node, Bun
// and Cloudflare's workerd, one line per runtime. Bun and workerd come from
// npm, pinned, installed by `deno task test:runtimes`; Node is the one on
// PATH, and its leg fails, rather than run under Deno, when there is none.

import { deepStrictEqual, equal, notEqual, ok } from "node:assert/strict";
import * as lib from "../../mod.ts";
import { createFakePartnerService } from "../../src/testing/mod.ts";
import type { FakePartnerServiceOptions } from "../../src/testing/mod.ts";
import { scenario } from "./scenario.mjs";
import { describeFake, remoteFake, withControl } from "./control.mjs";
import { Command, processTest } from "../_processes.ts";

const RUNTIMES = ".test-tmp/runtimes";
const BUN = `${RUNTIMES}/node_modules/bun/bin/bun.exe`;
const WORKERD = `${RUNTIMES}/node_modules/workerd/bin/workerd`;
const CHECKS = 7;

type Check = { name: string; ok: boolean; detail?: string };

/** The fake on Deno.serve, with the control routes. */
function serveFake(options: FakePartnerServiceOptions = {}) {
  const service = createFakePartnerService({
    quota: { perHour: 100 },
    ...options,
  });
  const serve = (handler: Deno.ServeHandler) =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const main = serve(withControl(service));
  const pci = serve(service.handlePci);
  const origin = (server: Deno.HttpServer<Deno.NetAddr>) =>
    `http://127.0.0.1:${server.addr.port}`;
  return {
    description: describeFake(service, origin(main), origin(pci)),
    service,
    async [Symbol.asyncDispose]() {
      service.close();
      await Promise.all([main.shutdown(), pci.shutdown()]);
    },
  };
}

/** Prints the runtime's line, and fails with every failed check. */
function report(runtime: string, checks: Check[], extra = ""): void {
  const passed = checks.filter((check) => check.ok).length;
  console.log(`${runtime}: ${passed}/${checks.length} checks passed${extra}`);
  deepStrictEqual(
    checks.filter((check) => !check.ok),
    [],
    `${runtime}: failed checks`,
  );
  equal(checks.length, CHECKS);
}

/** `program --version`, or a clear error when the program is missing. */
async function version(program: string, hint: string): Promise<string> {
  try {
    const { stdout } = await new Command(program, {
      args: ["--version"],
      stdout: "piped",
      stderr: "null",
    }).output();
    return new TextDecoder().decode(stdout).trim();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(`${program} is not installed: ${hint}`);
    }
    throw error;
  }
}

/** Runs node_runner.mjs under `program` and reads its lines back. */
async function runNodeLike(program: string): Promise<Check[]> {
  const { code, stdout, stderr } = await new Command(program, {
    args: ["tests/runtimes/node_runner.mjs", RUNTIMES],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(stdout).split("\n");
  const checks = lines.filter((line) => /^(not )?ok - /.test(line)).map((
    line,
  ) => ({
    name: line.replace(/^(not )?ok - /, ""),
    ok: line.startsWith("ok"),
  }));
  if (checks.length === 0 || code !== 0) {
    console.error(lines.join("\n"), new TextDecoder().decode(stderr));
  }
  return checks;
}

processTest("the bundles the other runtimes load use no Deno API", async () => {
  for (const bundle of ["partner-api.mjs", "fake.mjs"]) {
    const code = await Deno.readTextFile(`${RUNTIMES}/${bundle}`);
    ok(!/(^|[^"'\w])Deno\./m.test(code), `${bundle} uses Deno`);
  }
});

processTest("the scenario passes on Deno", async () => {
  await using fake = serveFake();
  const checks = await scenario(lib, remoteFake(fake.description), {
    inspect: Deno.inspect,
  });
  report(`deno ${Deno.version.deno}`, checks);
});

processTest(
  "the scenario passes on Node, and fails clearly without it",
  async () => {
    const node = await version(
      "node",
      "the Node leg of the runtime matrix needs Node 20 or later on PATH; it does not fall back to Deno",
    );
    report(`node ${node}`, await runNodeLike("node"));
  },
);

processTest("the scenario passes on Bun", async () => {
  const bun = await version(BUN, "run `deno task runtimes:install`");
  report(`bun ${bun}`, await runNodeLike(BUN));
});

processTest(
  "the scenario passes on workerd, and a shared provider refreshes across requests",
  async () => {
    const workerd = (await version(WORKERD, "run `deno task runtimes:install`"))
      .replace(/^workerd /, "");
    await using fake = serveFake();
    await using shortLived = serveFake({ tokenLifetime: 4000 });
    await using worker = await startWorkerd();
    const checks = await worker.call<Check[]>("/scenario", fake.description);
    const shared = await sharedProviderAcrossRequests(worker, shortLived);
    const paced = await sharedClientAcrossRequests(worker, fake);
    report(
      `workerd ${workerd}`,
      checks,
      `; a provider shared across requests refreshed through waitUntil (${shared.withWaitUntil} token requests), and a refresh the runtime dropped did not trap the next caller (${shared.without} token requests); a paced client shared across requests answered ${paced} of ${paced}`,
    );
  },
);

/**
 * A provider kept in module state, its token due for refresh during one
 * request and needed after that request ended. With waitUntil the refresh
 * lands; without it workerd drops the refresh, and the next caller must
 * start a new one instead of waiting for the dead one. Real time: the token
 * lives 4 s, the refresh starts 2 s before expiry.
 */
async function sharedProviderAcrossRequests(
  worker: Workerd,
  fake: ReturnType<typeof serveFake>,
) {
  const token = async (waitUntil: boolean) =>
    (await worker.call<{ accessToken: string }>("/shared-token", {
      ...fake.description,
      refreshMargin: 2000,
      waitUntil,
    })).accessToken;
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
  const first = await token(true);
  const dropped = await token(false);
  await sleep(2300); // inside both refresh windows
  equal(await token(true), first, "the old token while refreshing");
  equal(await token(false), dropped, "the old token while refreshing");
  await sleep(600);
  const withWaitUntil = fake.service.tokenRequests;
  notEqual(
    await token(true),
    first,
    "the refresh landed after its request ended",
  );
  await sleep(1200); // past the first token's use, for the one without waitUntil
  const rescued = await token(false);
  notEqual(rescued, dropped);
  ok(fake.service.isValidToken(rescued));
  return { withWaitUntil, without: fake.service.tokenRequests };
}

/**
 * A client kept in module state, paced to 1 request per 300 ms, called by 3
 * requests at once, then by 2 more: each waits in its limiter for a slot that
 * another request's timer frees. workerd cancelled such a waiter as hung (it
 * had nothing of its own pending), and the slot later handed to it was never
 * answered: every later request to that client failed.
 */
async function sharedClientAcrossRequests(
  worker: Workerd,
  fake: ReturnType<typeof serveFake>,
) {
  const page = () =>
    worker.call<{ status: number }>("/shared-client", {
      ...fake.description,
      key: "paced",
      interval: 300,
    });
  const calls = [await page(), ...await Promise.all([page(), page(), page()])];
  for (let call = 0; call < 2; call++) calls.push(await page());
  deepStrictEqual(calls.map(({ status }) => status), Array(6).fill(200));
  return calls.length;
}

interface Workerd extends AsyncDisposable {
  call<T>(path: string, body: unknown): Promise<T>;
}

/** workerd serving worker.mjs on a free loopback port, with loopback outbound. */
async function startWorkerd(): Promise<Workerd> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = probe.addr.port;
  probe.close();
  const config = `${RUNTIMES}/workerd.capnp`;
  await Deno.writeTextFile(config, workerdConfig(port));
  const process = new Command(WORKERD, {
    args: ["serve", config],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const origin = `http://127.0.0.1:${port}`;
  await untilListening(port);
  return {
    async call<T>(path: string, body: unknown): Promise<T> {
      const response = await fetch(`${origin}${path}`, {
        method: "POST",
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(20_000), // a hang fails, it does not hang
      });
      const answer = await response.json();
      if (!response.ok) throw new Error(JSON.stringify(answer));
      return answer as T;
    },
    async [Symbol.asyncDispose]() {
      process.kill();
      await process.status;
      await process.stderr.cancel();
    },
  };
}

async function untilListening(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      await new Promise((done) => setTimeout(done, 50));
    }
  }
  throw new Error(`workerd did not listen on ${port}`);
}

function workerdConfig(port: number): string {
  const module = (name: string, path: string) =>
    `(name = "${name}", esModule = embed "${path}")`;
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "loopback", network = (allow = ["local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [
    ${module("worker.mjs", "../../tests/runtimes/worker.mjs")},
    ${module("partner-api.mjs", "partner-api.mjs")},
    ${module("scenario.mjs", "../../tests/runtimes/scenario.mjs")},
    ${module("control.mjs", "../../tests/runtimes/control.mjs")},
  ],
  compatibilityDate = "2025-06-01",
  globalOutbound = "loopback",
);
`;
}
