// The core on Node 20, from the bundle `deno task test:node` builds: a
// node:http fake of the service, and the module's main paths against it.
//
//   deno bundle --platform browser -o .test-tmp/partner-api.mjs mod.ts
//   node --test tests/node/smoke.test.mjs

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";

const BUNDLE = new URL("../../.test-tmp/partner-api.mjs", import.meta.url);
const api = await import(BUNDLE.href);

const CLIENT_ID = "node-client";
const CLIENT_SECRET = "node-secret-value";
const AUDIENCE = "https://partner-api.node";
const ITEMS = Array.from({ length: 23 }, (_, i) => ({ id: i }));
const issued = new Set();
let tokenRequests = 0;
let quotaLeft = 5;

function send(response, status, body, headers = {}) {
  response.writeHead(status, {
    "content-type": "application/json",
    ...headers,
  });
  response.end(JSON.stringify(body));
}

async function readBody(request) {
  let text = "";
  for await (const chunk of request) text += chunk;
  return JSON.parse(text);
}

const server = createServer(async (request, response) => {
  const url = new URL(request.url, "http://127.0.0.1");
  if (url.pathname === "/oauth/token") {
    tokenRequests++;
    const body = await readBody(request);
    const quota = `b=per_hour;q=5;r=${Math.max(0, quotaLeft - 1)};t=60`;
    if (body.client_secret !== CLIENT_SECRET || body.audience !== AUDIENCE) {
      return send(response, 401, { error: "access_denied" });
    }
    if (quotaLeft === 0) {
      return send(response, 429, { error: "too_many_requests" }, {
        "idp-client-quota-limit": "b=per_hour;q=5;r=0;t=60",
      });
    }
    quotaLeft--;
    const token = `token-${tokenRequests}`;
    issued.add(token);
    return send(response, 200, {
      access_token: token,
      expires_in: 3600,
      token_type: "Bearer",
    }, {
      "idp-client-quota-limit": quota,
    });
  }
  if (url.pathname === "/api/items") {
    const token = request.headers.authorization?.replace(/^Bearer /, "");
    if (!issued.has(token)) {
      return send(response, 401, { error: "invalid_token" });
    }
    const limit = Number(url.searchParams.get("limit"));
    const page = Number(url.searchParams.get("page"));
    return send(response, 200, {
      items: ITEMS.slice((page - 1) * limit, page * limit),
    });
  }
  send(response, 404, { error: "not_found" });
});

let environment;
before(async () => {
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  environment = api.defineEnvironment({
    baseUrl: `${origin}/api/`,
    pciBaseUrl: `${origin}/pci/`,
    tokenUrl: `${origin}/oauth/token`,
    audience: AUDIENCE,
  });
});

after(() => {
  server.closeAllConnections();
  server.close();
});

const credentials = { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET };

test("the bundle does not use the Deno namespace", async () => {
  const code = await readFile(BUNDLE, "utf8");
  assert.doesNotMatch(code, /(^|[^"'\w])Deno\./m);
});

test("parseQuotaHeader() reads the header", () => {
  assert.deepEqual(api.parseQuotaHeader("b=per_hour;q=10;r=7;t=3540"), [
    { bucket: "per_hour", limit: 10, remaining: 7, resetAfter: 3540 },
  ]);
});

test("requestToken() gets a token and its quota", async () => {
  const token = await api.requestToken({ ...environment, ...credentials });
  assert.equal(token.tokenType, "Bearer");
  assert.equal(token.quota[0].bucket, "per_hour");
});

test("a provider makes one request for concurrent callers and hides the secret", async () => {
  const before = tokenRequests;
  const provider = api.createTokenProvider({ ...environment, ...credentials });
  const tokens = await Promise.all(
    Array.from({ length: 50 }, () => provider.getToken()),
  );
  assert.equal(new Set(tokens.map((t) => t.accessToken)).size, 1);
  assert.equal(tokenRequests - before, 1);
  const { inspect } = await import("node:util");
  assert.ok(!inspect(provider, { depth: 5 }).includes(CLIENT_SECRET));
  assert.ok(!inspect(tokens[0]).includes(tokens[0].accessToken));
});

test("paginate() pages in order", async () => {
  const pages = (request) =>
    Promise.resolve(
      ITEMS.slice(
        (request.page - 1) * request.limit,
        request.page * request.limit,
      ),
    );
  const seen = [];
  for await (const item of api.paginate(pages, { limit: 5, concurrency: 3 })) {
    seen.push(item.id);
  }
  assert.deepEqual(seen, ITEMS.map((item) => item.id));
});

test("a client lists under its base and refuses other origins", async () => {
  const client = api.createClient({ environment, ...credentials });
  const items = await api.collect(client.list("items", { limit: 10 }), {
    maxItems: 100,
  });
  assert.equal(items.length, ITEMS.length);
  await assert.rejects(
    client.fetch("https://elsewhere.example/api/items"),
    TypeError,
  );
});

test("a 429 is a QuotaExceededError, and the circuit stops further requests", async () => {
  quotaLeft = 0;
  const provider = api.createTokenProvider({ ...environment, ...credentials });
  await assert.rejects(provider.getToken(), api.QuotaExceededError);
  const before = tokenRequests;
  await assert.rejects(provider.getToken(), api.QuotaExceededError);
  assert.equal(tokenRequests, before);
});
