// The fake partner service in a terminal of its own, for trying the CLI or
// your code against it from another terminal (and for benchmarks that want
// the server in another process):
//
//   deno task fake --port 8787
//
// It prints the PARTNER_API_* lines to paste (or to put in a .env file) and
// serves until Ctrl-C. Options: --port, --transactions, --per-hour,
// --token-lifetime, --latency (durations in ms).

import { parseArgs } from "node:util";
import { startFakePartnerApi } from "@partner-api/client/testing";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "8787" },
    transactions: { type: "string", default: "500" },
    "per-hour": { type: "string", default: "1000" },
    "token-lifetime": { type: "string", default: "86400000" },
    latency: { type: "string", default: "0" },
  },
});

const api = await startFakePartnerApi({
  port: Number(values.port),
  items: { transactions: Number(values.transactions) },
  quota: { perHour: Number(values["per-hour"]) },
  tokenLifetime: Number(values["token-lifetime"]),
  latency: Number(values.latency),
});
const { environment, credentials } = api;
console.log(`PARTNER_API_BASE_URL=${environment.baseUrl.href}
PARTNER_API_PCI_BASE_URL=${environment.pciBaseUrl.href}
PARTNER_API_TOKEN_URL=${environment.tokenUrl.href}
PARTNER_API_AUDIENCE=${environment.audience}
PARTNER_API_CLIENT_ID=${credentials.clientId}
PARTNER_API_CLIENT_SECRET=${credentials.clientSecret}`);
console.error("fake partner API running; Ctrl-C stops it");
Deno.addSignalListener("SIGINT", async () => {
  await api.close();
  Deno.exit(0);
});
