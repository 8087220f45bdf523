// Issue 37: the fake tool takes a clock (--now), its data end minutes before
// it, and --help says exactly what --latency delays (token answers are not).

import { equal, match, ok } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";
import { createClient } from "../../src/client/mod.ts";
import { defineEnvironment } from "../../src/core/environment.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** examples/fake_server.ts with `args`, its output piped. */
function fake(args: string[]) {
  return new Command("deno", {
    args: [
      "run",
      "--no-prompt",
      "--allow-net=127.0.0.1",
      "examples/fake_server.ts",
      "--port",
      "0",
      "--quiet",
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  });
}

/** The PARTNER_API_* lines the fake prints first. */
async function variables(stdout: ReadableStream<Uint8Array>) {
  const lines: Record<string, string> = {};
  let buffer = "";
  for await (const chunk of stdout.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    for (const line of buffer.split("\n").slice(0, -1)) {
      const [name, value] = line.split("=", 2);
      lines[name!] = value!;
    }
    if (Object.keys(lines).length >= 6) break;
  }
  return lines;
}

processTest(
  "deno task fake --now TIME serves data whose newest item is minutes before TIME",
  async () => {
    const child = fake(["--now", "2026-01-01T00:00:00Z"]).spawn();
    try {
      const env = await variables(child.stdout);
      const client = createClient({
        environment: defineEnvironment({
          baseUrl: env.PARTNER_API_BASE_URL!,
          pciBaseUrl: env.PARTNER_API_PCI_BASE_URL!,
          tokenUrl: env.PARTNER_API_TOKEN_URL!,
          audience: env.PARTNER_API_AUDIENCE!,
        }),
        clientId: env.PARTNER_API_CLIENT_ID!,
        clientSecret: env.PARTNER_API_CLIENT_SECRET!,
      });
      const [newest] = await Array.fromAsync(
        client.list<{ creationDate: string }>("transactions", {
          sortBy: "creationDate",
          sortDirection: "DESC",
          maxItems: 1,
        }),
      );
      match(newest!.creationDate, /^2025-12-31T23:5\d:/);
    } finally {
      child.kill("SIGINT");
      await child.status;
      await child.stderr.cancel();
    }
  },
);

processTest(
  "the fake tool's --help says what --latency delays; a bad --now is one line, exit 2",
  async () => {
    const help = await fake(["--help"]).output();
    equal(help.code, 0);
    match(text(help.stdout), /--latency MS +added to every API answer/);
    match(text(help.stdout), /token answers are not delayed/);
    ok(text(help.stdout).includes("--now TIME"));
    const bad = await fake(["--now", "yesterday"]).output();
    equal(bad.code, 2);
    equal(text(bad.stderr).trim().split("\n").length, 1, text(bad.stderr));
  },
);
