// Issue 18: the fake as a tool (`deno task fake`): help, one-line errors,
// stable credentials and ports, a log line per request.

import { equal, ok } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";

/** Runs examples/fake_server.ts with `args` until it exits (or is stopped). */
function fake(args: string[]) {
  return new Command("deno", {
    args: [
      "run",
      "--no-prompt",
      "--allow-net=127.0.0.1",
      "examples/fake_server.ts",
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  });
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

processTest(
  "the fake tool's --help lists every option; a bad flag is one line and exit 2",
  async () => {
    const help = await fake(["--help"]).output();
    equal(help.code, 0);
    for (
      const flag of [
        "--port",
        "--pci-port",
        "--client-id",
        "--client-secret",
        "--rate-limit",
        "--latency",
      ]
    ) {
      ok(text(help.stdout).includes(flag), flag);
    }
    const bad = await fake(["--prot", "1"]).output();
    equal(bad.code, 2);
    equal(text(bad.stderr).trim().split("\n").length, 1, text(bad.stderr));
    const notNumber = await fake(["--port", "eighty"]).output();
    equal(notNumber.code, 2);
    equal(text(notNumber.stderr).trim().split("\n").length, 1);
  },
);

processTest(
  "the fake tool on a port in use ends in one line and exit 1",
  async () => {
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const result = await fake(["--port", String(taken.addr.port)]).output();
    equal(result.code, 1);
    equal(
      text(result.stderr).trim().split("\n").length,
      1,
      text(result.stderr),
    );
  },
);

processTest(
  "the fake tool keeps given credentials and ports, and logs a line per request",
  async () => {
    const ports = [0, 0].map(() => {
      const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = probe.addr.port;
      probe.close();
      return port;
    });
    const child = fake([
      "--port",
      String(ports[0]),
      "--pci-port",
      String(ports[1]),
      "--client-id",
      "me",
      "--client-secret",
      "stable-secret-123",
    ]).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("PARTNER_API_CLIENT_SECRET=")) {
      const { value, done } = await lines.read();
      if (done) break;
      out += value;
    }
    const vars = Object.fromEntries(
      out.trim().split("\n").map((line) => line.split(/=(.*)/s).slice(0, 2)),
    );
    equal(vars.PARTNER_API_CLIENT_ID, "me");
    equal(vars.PARTNER_API_CLIENT_SECRET, "stable-secret-123");
    ok(vars.PARTNER_API_BASE_URL.includes(`:${ports[0]}/`));
    ok(vars.PARTNER_API_PCI_BASE_URL.includes(`:${ports[1]}/`));
    const answer = await fetch(
      new URL("organizations", vars.PARTNER_API_BASE_URL),
    );
    await answer.body?.cancel();
    child.kill("SIGINT");
    await lines.cancel();
    const { code } = await child.status;
    const log = await new Response(child.stderr).text();
    equal(code, 0);
    ok(log.includes("GET /api/organizations 401 (token requests: 0)"), log);
    ok(!log.includes("stable-secret-123"));
  },
);
