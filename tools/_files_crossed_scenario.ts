// One path of tools/files_crossed.ts, run up to its call ("before") or with
// it ("with"), against an in-memory fetch that answers like the service:
//
//   deno run --coverage=DIR tools/_files_crossed_scenario.ts PATH before|with

import { defineEnvironment } from "../src/core/environment.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { createClient } from "../src/client/mod.ts";
import { createSqliteSink, syncList } from "../src/sync/mod.ts";

const [path, phase] = Deno.args;
const environment = defineEnvironment({
  baseUrl: "http://127.0.0.1:1/api/",
  pciBaseUrl: "http://127.0.0.1:1/pci/",
  tokenUrl: "http://127.0.0.1:1/oauth/token",
  audience: "https://partner.example",
});
const credentials = { clientId: "me", clientSecret: "s3cret" };
const items = [1, 2, 3].map((n) => ({ transactionID: `t${n}`, amount: n }));

/** The service, in memory: a token, or one page of three transactions. */
function answer(input: RequestInfo | URL): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : input);
  if (url.pathname === "/oauth/token") {
    return Promise.resolve(Response.json(
      { access_token: "t0k3n", token_type: "Bearer", expires_in: 86_400 },
      { headers: { "idp-client-quota-limit": "b=per_hour;q=10;r=9;t=3600" } },
    ));
  }
  const page = Number(url.searchParams.get("page") ?? 1);
  const limit = Number(url.searchParams.get("limit") ?? 50);
  return Promise.resolve(Response.json({
    transactions: page === 1 ? items : [],
    page,
    limit,
  }));
}

const options = { environment, ...credentials, fetch: answer };
const paths: Record<string, () => Promise<() => Promise<unknown>>> = {
  "cold getToken": () => {
    const provider = createTokenProvider(options);
    return Promise.resolve(() => provider.getToken());
  },
  "client.fetch": async () => {
    const client = createClient(options);
    await (await client.fetch("transactions")).arrayBuffer();
    return async () => await (await client.fetch("transactions")).arrayBuffer();
  },
  "first list page": async () => {
    const client = createClient(options);
    await client.tokenProvider.getToken();
    return async () => {
      const pages = client.pages("transactions")[Symbol.asyncIterator]();
      await pages.next();
      await pages.return?.();
    };
  },
  "one syncList window": async () => {
    const client = createClient(options);
    await client.tokenProvider.getToken();
    const sink = createSqliteSink(":memory:", { table: "transactions" });
    return () =>
      syncList(client, "transactions", { id: "transactionID", sink });
  },
};

const call = await paths[path!]!();
if (phase === "with") await call();
