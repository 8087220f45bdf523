// Issues 18 and 37: the fake as a tool (`deno task fake`): help, one-line
// errors, stable credentials and ports, a log line per request, and a clock
// (--now) its data end minutes before, the same at every start; --churn
// changes each list on every request for it; --help says exactly what
// --latency delays (token answers are not).

import { equal, match, ok } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";
import { createClient } from "../../src/client/mod.ts";
import { defineEnvironment } from "../../src/core/environment.ts";

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
  "the fake tool's --help lists every option and what --latency delays; a bad flag or value is one line and exit 2",
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
        "--now TIME",
        "--churn K=N",
      ]
    ) {
      ok(text(help.stdout).includes(flag), flag);
    }
    match(text(help.stdout), /--latency MS +added to every API answer/);
    match(text(help.stdout), /token answers are not delayed/);
    for (
      const args of [
        ["--prot", "1"],
        ["--port", "eighty"],
        ["--now", "yesterday"],
        ["--churn", "apend=1"],
        ["--churn", "append=x"],
      ]
    ) {
      const bad = await fake(args).output();
      equal(bad.code, 2, args.join(" "));
      equal(text(bad.stderr).trim().split("\n").length, 1, text(bad.stderr));
    }
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
    const vars = await variables(child.stdout);
    equal(vars.PARTNER_API_CLIENT_ID, "me");
    equal(vars.PARTNER_API_CLIENT_SECRET, "stable-secret-123");
    ok(vars.PARTNER_API_BASE_URL!.includes(`:${ports[0]}/`));
    ok(vars.PARTNER_API_PCI_BASE_URL!.includes(`:${ports[1]}/`));
    const answer = await fetch(
      new URL("organizations", vars.PARTNER_API_BASE_URL),
    );
    await answer.body?.cancel();
    child.kill("SIGINT");
    const { code } = await child.status;
    const log = await new Response(child.stderr).text();
    equal(code, 0);
    ok(log.includes("GET /api/organizations 401 (token requests: 0)"), log);
    ok(!log.includes("stable-secret-123"));
  },
);

/** Runs `use` with a client of a fake started quietly on a free port with `args`; stops the fake after. */
async function withFake(
  args: string[],
  use: (client: ReturnType<typeof clientOf>) => Promise<void>,
): Promise<void> {
  const child = fake(["--port", "0", "--quiet", ...args]).spawn();
  try {
    await use(clientOf(await variables(child.stdout)));
  } finally {
    child.kill("SIGINT");
    await child.status;
    await child.stderr.cancel();
  }
}

/** A client of the fake that printed `env`. */
function clientOf(env: Record<string, string>) {
  return createClient({
    environment: defineEnvironment({
      baseUrl: env.PARTNER_API_BASE_URL!,
      pciBaseUrl: env.PARTNER_API_PCI_BASE_URL!,
      tokenUrl: env.PARTNER_API_TOKEN_URL!,
      audience: env.PARTNER_API_AUDIENCE!,
    }),
    clientId: env.PARTNER_API_CLIENT_ID!,
    clientSecret: env.PARTNER_API_CLIENT_SECRET!,
  });
}

processTest(
  "deno task fake --now TIME serves data whose newest item is exactly 3 minutes before TIME, so a restart with the same TIME serves the same data",
  async () => {
    await withFake(["--now", "2026-01-01T00:00:00Z"], async (client) => {
      const [newest] = await Array.fromAsync(
        client.list<{ creationDate: string }>("transactions", {
          sortBy: "creationDate",
          sortDirection: "DESC",
          maxItems: 1,
        }),
      );
      // Not a millisecond later: the clock's first reading is TIME itself.
      equal(newest!.creationDate, "2025-12-31T23:57:00.000Z");
    });
  },
);

processTest(
  "deno task fake --churn append=2,remove=1 changes the list on every request for it",
  async () => {
    const args = ["--transactions", "3", "--churn", "append=2,remove=1"];
    await withFake(args, async (client) => {
      const count = async () => {
        const body = await (await client.fetch("transactions")).json();
        return (body.transactions as unknown[]).length;
      };
      equal(await count(), 4); // 3 + 2 - 1
      equal(await count(), 5);
    });
  },
);
