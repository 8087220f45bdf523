// The fake partner service in a terminal of its own, for trying the CLI or
// your code against it from another terminal (and for benchmarks that want
// the server in another process):
//
//   PARTNER_API_CLIENT_SECRET=s3cret deno task fake --port 8787 --client-id me
//
// It prints the PARTNER_API_* lines to paste (or to put in a .env file),
// logs a line per request on standard error, and serves until Ctrl-C.

import { parseArgs } from "node:util";
import { startFakePartnerApi } from "@partner-api/client/testing";

const HELP = `Usage: deno task fake [options]

Serves a fake of the partner service on 127.0.0.1 and prints the
PARTNER_API_* lines that point a client at it.

Options (durations in ms):
  --port N              token endpoint and API (default 8787; 0: any free port)
  --pci-port N          card-data origin (default: --port + 1, so that the
                        printed lines survive a restart; 0 with --port 0)
  --client-id ID        fixed client id (else PARTNER_API_CLIENT_ID, else random)
  --client-secret S     fixed secret (else PARTNER_API_CLIENT_SECRET, else random)
  --transactions N      transactions in the list (default 500)
  --per-hour N          token requests per hour (default 1000)
  --token-lifetime MS   token lifetime (default 86400000)
  --latency MS          added to every API answer (lists and card data);
                        token answers are not delayed (default 0)
  --now TIME            the fake's clock starts at TIME (ISO 8601, e.g.
                        2026-11-25T06:00:00Z) and runs on from there; its data
                        end a few minutes before it (default: the real time);
                        the same TIME and sizes give the same data at every
                        start (else a restart re-dates every item)
  --rate-limit N/MS     API requests allowed per window, e.g. 900/300000
  --churn K=N,...       how each list changes on every request for it, e.g.
                        append=2,remove=1,update=1 (keys: append,
                        insertAnywhere, remove, update; default: no change,
                        so a sync run again finds nothing new)
  --quiet               no line per request
  -h, --help            this help
`;

/** Reads the command line; `undefined` after printing help. */
function options(args: string[]) {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      help: { type: "boolean", short: "h" },
      quiet: { type: "boolean" },
      port: { type: "string", default: "8787" },
      "pci-port": { type: "string" },
      "client-id": { type: "string" },
      "client-secret": { type: "string" },
      transactions: { type: "string", default: "500" },
      "per-hour": { type: "string", default: "1000" },
      "token-lifetime": { type: "string", default: "86400000" },
      latency: { type: "string", default: "0" },
      now: { type: "string" },
      "rate-limit": { type: "string" },
      churn: { type: "string" },
    },
  });
  return values;
}

/** The card-data port: as given, else next to a fixed --port (0 stays 0). */
function pciPort(port: string, pci: string | undefined): number {
  if (pci !== undefined) return number(pci, "pci-port");
  const main = number(port, "port");
  return main === 0 ? 0 : main + 1;
}

/** A variable, when this process may read it (never a prompt). */
function variable(name: string): string | undefined {
  const state = Deno.permissions.querySync({ name: "env", variable: name })
    .state;
  return state === "granted" ? Deno.env.get(name) : undefined;
}

/**
 * A clock that reads `text` first and runs at the real pace from that first
 * reading (the fake's data are dated by it), so the same --now and sizes give
 * the same data at every start.
 */
function clockFrom(text: string): () => number {
  const start = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(start)) {
    throw new UsageError(
      `--now must be an ISO 8601 time, e.g. 2026-11-25T06:00:00Z: received ${text}`,
    );
  }
  let started: number | undefined;
  return () => start + (Date.now() - (started ??= Date.now()));
}

function number(text: string, flag: string): number {
  if (!/^\d+$/.test(text)) {
    throw new UsageError(`--${flag} must be a number: received ${text}`);
  }
  return Number(text);
}

class UsageError extends Error {}

const CHURN_KEYS = ["append", "insertAnywhere", "remove", "update"];

/** `append=2,remove=1`: counts per list request, by key. */
function churn(text: string): Record<string, number> {
  return Object.fromEntries(
    text.split(",").map((pair) => {
      const [key = "", value = "", ...rest] = pair.split("=");
      if (!CHURN_KEYS.includes(key) || rest.length > 0) {
        throw new UsageError(
          `--churn takes ${
            CHURN_KEYS.join(", ")
          } as KEY=N, e.g. append=2,remove=1: received ${text}`,
        );
      }
      return [key, number(value, `churn ${key}`)];
    }),
  );
}

/** The fake's options from the command line. */
function fakeOptions(
  values: ReturnType<typeof options>,
): Parameters<typeof startFakePartnerApi>[0] {
  const [requests, interval] = values["rate-limit"]?.split("/") ?? [];
  const clientId = values["client-id"] ?? variable("PARTNER_API_CLIENT_ID");
  const clientSecret = values["client-secret"] ??
    variable("PARTNER_API_CLIENT_SECRET");
  return {
    port: number(values.port, "port"),
    pciPort: pciPort(values.port, values["pci-port"]),
    credentials: {
      ...(clientId ? { clientId } : {}),
      ...(clientSecret ? { clientSecret } : {}),
    },
    items: { transactions: number(values.transactions, "transactions") },
    quota: { perHour: number(values["per-hour"], "per-hour") },
    tokenLifetime: number(values["token-lifetime"], "token-lifetime"),
    latency: number(values.latency, "latency"),
    ...(values.now === undefined ? {} : { now: clockFrom(values.now) }),
    ...(values.churn === undefined ? {} : { churn: churn(values.churn) }),
    ...(values["rate-limit"] === undefined ? {} : {
      apiRateLimit: {
        requests: number(requests ?? "", "rate-limit"),
        interval: number(interval ?? "", "rate-limit"),
      },
    }),
    ...(values.quiet ? {} : {
      onRequest: ({ method, path, status, tokenRequests }) =>
        console.error(
          `${method} ${path} ${status} (token requests: ${tokenRequests})`,
        ),
    }),
  };
}

async function main(args: string[]): Promise<number> {
  let values;
  try {
    values = options(args);
  } catch (error) {
    console.error(
      `fake: ${
        (error as Error).message.replace(/\s*\n\s*/g, " ")
      } (see deno task fake --help)`,
    );
    return 2;
  }
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  let api;
  try {
    api = await startFakePartnerApi(fakeOptions(values));
  } catch (error) {
    if (
      error instanceof UsageError || error instanceof RangeError ||
      error instanceof TypeError
    ) {
      console.error(`fake: ${error.message} (see deno task fake --help)`);
      return 2;
    }
    if (error instanceof Deno.errors.AddrInUse) {
      console.error(
        `fake: port ${values.port} or ${
          values["pci-port"] ?? "the one after it"
        } is in use: pick another with --port or --pci-port (0: any free port)`,
      );
      return 1;
    }
    throw error;
  }
  const { environment, credentials } = api;
  console.log(`PARTNER_API_BASE_URL=${environment.baseUrl.href}
PARTNER_API_PCI_BASE_URL=${environment.pciBaseUrl.href}
PARTNER_API_TOKEN_URL=${environment.tokenUrl.href}
PARTNER_API_AUDIENCE=${environment.audience}
PARTNER_API_CLIENT_ID=${credentials.clientId}
PARTNER_API_CLIENT_SECRET=${credentials.clientSecret}`);
  console.error("fake partner API running; Ctrl-C stops it");
  const stop = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", () => stop.resolve());
  await stop.promise;
  await api.close();
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
