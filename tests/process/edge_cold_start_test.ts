// Issue 37, friction 6: examples/edge_function.ts in its one-line form, run
// as its header says (deno serve, KV, --unstable-no-legacy-abort): one
// token for a burst of requests, failures answered (503 on a spent quota,
// 502 with what to check in the log, never the secret), no legacy-abort
// warning. It measures the cold start to the first answer against a
// hello-world `deno serve` in the same run, and prints it: timing goals are
// reported here and kept in docs/performance.md, never asserted.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { requestToken } from "../../src/token/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { Command, processTest } from "../_processes.ts";

const HELLO = ".test-tmp/hello_serve.ts";

function freePort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = probe.addr.port;
  probe.close();
  return port;
}

/** `deno serve` of `module` on `port`, as the example's header has it. */
function serve(module: string, port: number, env: Record<string, string>) {
  return new Command("deno", {
    args: [
      "serve",
      "--quiet",
      "--unstable-kv",
      "--unstable-no-legacy-abort",
      "--host=127.0.0.1",
      `--port=${port}`,
      "--allow-env=PARTNER_API_*",
      "--allow-net=127.0.0.1",
      module,
    ],
    env,
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

/** Milliseconds from `started` to the first answer at `url`, and the answer. */
async function firstAnswer(url: string, started: number) {
  while (true) {
    try {
      const response = await fetch(url);
      return { ms: performance.now() - started, response };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}

/** Starts `module`, waits for its first answer, stops it; its stderr. */
async function coldStart(
  module: string,
  path: string,
  env: Record<string, string>,
) {
  const port = freePort();
  const started = performance.now();
  const server = serve(module, port, env);
  try {
    const { ms, response } = await firstAnswer(
      `http://127.0.0.1:${port}${path}`,
      started,
    );
    const body = await response.text();
    const retryAfter = response.headers.get("retry-after");
    return { ms, status: response.status, body, retryAfter, port, server };
  } catch (error) {
    server.kill();
    throw error;
  }
}

async function stop(server: Deno.ChildProcess): Promise<string> {
  server.kill();
  await server.status;
  return await new Response(server.stderr).text();
}

const median = (values: number[]) =>
  values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]!;

processTest(
  "the edge example answers a burst on one token, with no legacy-abort warning; its cold start is measured against hello-world deno serve",
  async () => {
    await Deno.writeTextFile(
      HELLO,
      'export default { fetch: () => new Response("hello") } satisfies Deno.ServeDefaultExport;\n',
    );
    const edge: number[] = [];
    const hello: number[] = [];
    const tokens: number[] = [];
    for (let run = 0; run < 3; run++) {
      await using api = await startFakePartnerApi({
        items: { organizations: 140 },
      });
      const env = { ...configFor(api), PARTNER_API_KV_PATH: ":memory:" };
      const first = await coldStart(
        "examples/edge_function.ts",
        "/organizations/count",
        env,
      );
      let stderr = "";
      try {
        equal(first.status, 200, first.body);
        deepStrictEqual(JSON.parse(first.body), { organizations: 140 });
        const burst = await Promise.all(
          Array.from(
            { length: 5 },
            () =>
              fetch(`http://127.0.0.1:${first.port}/organizations/count`)
                .then((r) => r.json()),
          ),
        );
        deepStrictEqual(burst, Array(5).fill({ organizations: 140 }));
      } finally {
        stderr = await stop(first.server);
      }
      equal(api.tokenRequests, 1, "six answers, one token");
      equal(stderr.includes("legacy"), false, stderr);
      edge.push(first.ms);
      const started = performance.now();
      await requestToken({ ...api.environment, ...api.credentials });
      tokens.push(performance.now() - started);
      const plain = await coldStart(HELLO, "/", {});
      equal(plain.body, "hello");
      await stop(plain.server);
      hello.push(plain.ms);
    }
    const goal = 1.5 * median(hello) + median(tokens);
    console.log(
      `cold start to the first answer (median of 3): edge example ${
        median(edge).toFixed(0)
      } ms, hello-world deno serve ${median(hello).toFixed(0)} ms, ` +
        `one token round trip ${median(tokens).toFixed(1)} ms; goal ≤ ${
          goal.toFixed(0)
        } ms (1.5× hello + a token): ${
          median(edge) <= goal ? "met" : "not met"
        } (${(median(edge) / median(hello)).toFixed(2)}× hello)`,
    );
  },
);

processTest(
  "the edge example answers 502 with what to check in its log, and 503 with Retry-After on a spent quota",
  async () => {
    await using api = await startFakePartnerApi();
    const wrong = {
      ...configFor(api),
      PARTNER_API_CLIENT_SECRET: "wrong-secret-never-logged",
      PARTNER_API_KV_PATH: ":memory:",
    };
    const refused = await coldStart(
      "examples/edge_function.ts",
      "/organizations/count",
      wrong,
    );
    const log = await stop(refused.server);
    equal(refused.status, 502);
    deepStrictEqual(JSON.parse(refused.body), {
      error: "the partner API failed",
    });
    ok(log.includes("check PARTNER_API_CLIENT_ID"), log);
    equal(log.includes("wrong-secret-never-logged"), false);

    await using spent = await startFakePartnerApi({ quota: { perHour: 0 } });
    const blocked = await coldStart(
      "examples/edge_function.ts",
      "/organizations/count",
      { ...configFor(spent), PARTNER_API_KV_PATH: ":memory:" },
    );
    await stop(blocked.server);
    equal(blocked.status, 503);
    ok(Number(blocked.retryAfter) >= 1, String(blocked.retryAfter));
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
