// examples/edge_function.ts as Deno Deploy runs it and as its header says:
// `deno serve` of its default export with --unstable-kv and
// --unstable-no-legacy-abort, against the fake, with KV in memory. One
// token for a burst of requests; failures answered (503 with Retry-After
// on a spent quota, 502 with what to check in the log, never the secret);
// no legacy-abort warning. Counts only: its cold start against a
// hello-world `deno serve` is tests/edge_cold_start_bench.ts's.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { Command, processTest } from "../_processes.ts";
import { denoServeArgs, freePort } from "../_deno_serve.ts";

/** A running `deno serve` of the example, once it has said it listens. */
interface Served extends AsyncDisposable {
  readonly url: string;
  /** Stops it; what it wrote to stderr. */
  stop(): Promise<string>;
}

/** Starts the example as its header says, and waits for its listening line. */
async function serveExample(env: Record<string, string>): Promise<Served> {
  const port = freePort();
  const server = new Command("deno", {
    args: denoServeArgs("examples/edge_function.ts", port),
    env: { ...env, PARTNER_API_KV_PATH: ":memory:" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stderr: Promise<string> | undefined;
  const stop = () =>
    stderr ??= (async () => {
      server.kill();
      await server.status;
      await server.stdout.cancel().catch(() => {});
      return await new Response(server.stderr).text();
    })();
  const lines = server.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  const { value } = await lines.read(); // the example's onListen line
  lines.releaseLock();
  if (!value?.includes("listening on")) {
    throw new Error(`the example did not listen: ${await stop()}`);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    stop,
    [Symbol.asyncDispose]: async () => void await stop(),
  };
}

/** GET `path` of `served`: its status, Retry-After and JSON body. */
async function get(served: Served, path: string) {
  const response = await fetch(`${served.url}${path}`);
  const retryAfter = response.headers.get("retry-after");
  const text = await response.text();
  const body = response.ok || response.status >= 500 ? JSON.parse(text) : text;
  return { status: response.status, retryAfter, body };
}

processTest(
  "examples/edge_function.ts answers a burst under deno serve on one token, with no legacy-abort warning",
  async () => {
    await using api = await startFakePartnerApi({
      items: { organizations: 140 },
    });
    await using served = await serveExample(configFor(api));
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => get(served, "/organizations/count")),
    );
    deepStrictEqual(
      answers.map(({ status, body }) => [status, body]),
      Array(6).fill([200, { organizations: 140 }]),
    );
    equal(api.tokenRequests, 1, "six answers, one token");
    equal((await get(served, "/other")).status, 404);
    const log = await served.stop();
    equal(log.includes("legacy"), false, log);
  },
);

processTest(
  "the edge example answers 502 with what to check in its log, and 503 with Retry-After on a spent quota",
  async () => {
    await using api = await startFakePartnerApi();
    await using refused = await serveExample({
      ...configFor(api),
      PARTNER_API_CLIENT_SECRET: "wrong-secret-never-logged",
    });
    const bad = await get(refused, "/organizations/count");
    deepStrictEqual([bad.status, bad.body], [502, {
      error: "the partner API failed",
    }]);
    const log = await refused.stop();
    ok(log.includes("check PARTNER_API_CLIENT_ID"), log);
    equal(log.includes("wrong-secret-never-logged"), false);

    await using spent = await startFakePartnerApi({ quota: { perHour: 0 } });
    await using blocked = await serveExample(configFor(spent));
    const late = await get(blocked, "/organizations/count");
    equal(late.status, 503);
    ok(Number(late.retryAfter) >= 1, String(late.retryAfter));
  },
);

processTest(
  "request.signal of Deno.serve passed to list, pages and fetch: no legacy-abort warning under --unstable-no-legacy-abort",
  async () => {
    await using api = await startFakePartnerApi({
      items: { organizations: 30 },
    });
    const script = ".test-tmp/request_signal_serve.ts";
    await Deno.writeTextFile(
      script,
      `import { createClient } from "${
        new URL("../../mod.ts", import.meta.url).href
      }";
const { PORT, ...env } = JSON.parse(Deno.args[0]!);
const client = createClient({
  environment: { baseUrl: new URL(env.base), pciBaseUrl: new URL(env.pci), tokenUrl: new URL(env.token), audience: env.audience },
  clientId: env.id,
  clientSecret: env.secret,
});
const server = Deno.serve({ hostname: "127.0.0.1", port: PORT, onListen() {} }, async (request) => {
  let items = 0;
  for await (const _ of client.list("organizations", { signal: request.signal })) items++;
  for await (const page of client.pages("organizations", { signal: request.signal })) items += page.items.length;
  const answer = await client.fetch("organizations", { signal: request.signal });
  await answer.body?.cancel();
  return Response.json({ items });
});
const reply = await fetch(\`http://127.0.0.1:\${PORT}/\`);
console.log(JSON.stringify(await reply.json()));
await server.shutdown();
`,
    );
    const { environment: e, credentials: c } = api;
    const settings = JSON.stringify({
      PORT: freePort(),
      base: e.baseUrl.href,
      pci: e.pciBaseUrl.href,
      token: e.tokenUrl.href,
      audience: e.audience,
      id: c.clientId,
      secret: c.clientSecret,
    });
    const run = await new Command("deno", {
      args: [
        "run",
        "--unstable-no-legacy-abort",
        "--allow-net=127.0.0.1",
        script,
        settings,
      ],
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    equal(run.code, 0, stderr);
    deepStrictEqual(JSON.parse(new TextDecoder().decode(run.stdout)), {
      items: 60,
    });
    equal(stderr.includes("legacy"), false, stderr);
  },
);
