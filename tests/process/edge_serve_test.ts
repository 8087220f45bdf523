// The edge function example as Deno Deploy runs it: `deno serve` on its
// default export, against the fake service, with KV in memory.

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { Command, processTest } from "../_processes.ts";

processTest(
  "examples/edge_function.ts answers under deno serve on one token",
  async () => {
    await using api = await startFakePartnerApi({
      items: { organizations: 140 },
    });
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = probe.addr.port;
    probe.close();
    const environment = { ...configFor(api), PARTNER_API_KV_PATH: ":memory:" };
    const server = new Command("deno", {
      args: [
        "serve",
        "--quiet",
        "--unstable-kv",
        `--host=127.0.0.1`,
        `--port=${port}`,
        "--allow-env=PARTNER_API_*",
        "--allow-net=127.0.0.1",
        "examples/edge_function.ts",
      ],
      env: environment,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      const lines = server.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      const { value } = await lines.read(); // the example's onListen line
      ok(value?.includes("listening on"), value);
      lines.releaseLock();
      const answers = await Promise.all(
        Array.from(
          { length: 5 },
          () =>
            fetch(`http://127.0.0.1:${port}/organizations/count`).then((r) =>
              r.json()
            ),
        ),
      );
      deepStrictEqual(answers, Array(5).fill({ organizations: 140 }));
      equal(api.tokenRequests, 1, "five requests, one token");
      const missing = await fetch(`http://127.0.0.1:${port}/other`);
      equal(missing.status, 404);
      await missing.body?.cancel();
    } finally {
      server.kill();
      await server.status;
      await server.stdout.cancel().catch(() => {});
      await server.stderr.cancel();
    }
  },
);
