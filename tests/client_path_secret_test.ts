// Outside review r149 F2: a client secret or an access token pasted into a
// fetch or list path was shown whole by the events (api.request, api.list,
// api.renewal), the partner_api.list span's url.path and Page.request.url,
// while ApiError redacted it (`/api/items/[client_secret]`).

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { createClient } from "../src/client/mod.ts";
import { defineEnvironment } from "../src/core/environment.ts";
import { ApiError } from "../src/core/errors.ts";
import type { PartnerApiEvent } from "../src/core/events.ts";
import { openTelemetry } from "../src/telemetry/otel.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { loopbackApi } from "./_loopback_api.ts";

const SECRET = "PathSecretVALUE-0123456789abcdef";
const TOKEN = "PathTokVALUE0123456789";

/** A loopback API: `list/...` answers an empty list, `auth/...` 401, anything else 404; the first token is `TOKEN`. */
function startApi() {
  let issued = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const { pathname } = new URL(request.url);
      if (pathname === "/token") {
        return Response.json({
          // The first token, then others (a renewal's).
          access_token: issued++ === 0 ? TOKEN : `Renewed-${issued}-abcdefgh`,
          token_type: "Bearer",
          expires_in: 3600,
        });
      }
      if (pathname.includes("/list/")) return Response.json([]);
      return new Response("no", {
        status: pathname.includes("/auth/") ? 401 : 404,
      });
    },
  );
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const environment = defineEnvironment({
    baseUrl: `${origin}/api/`,
    pciBaseUrl: `${origin}/pci/api/`,
    tokenUrl: `${origin}/token`,
    audience: "aud-aud-aud",
  });
  return { server, environment };
}

/** What a recording tracer was handed. */
function recordingTracer() {
  const spans: { name: string; attributes: unknown }[] = [];
  const span = { setStatus: () => ({ end: () => {} }) };
  const tracer = {
    startSpan: (name: string, options: { attributes: unknown }) => {
      spans.push({ name, attributes: options.attributes });
      return span;
    },
  };
  return { spans, tracer };
}

Deno.test("a client secret or access token in a fetch, list or pages path is redacted in api.request, api.renewal and api.list events, the partner_api.list span and Page.request.url, as ApiError redacts it", async () => {
  const { server, environment } = startApi();
  await using _ = { [Symbol.asyncDispose]: () => server.shutdown() };
  const events: PartnerApiEvent[] = [];
  const { spans, tracer } = recordingTracer();
  const otel = openTelemetry({ tracer });
  const client = createClient({
    environment,
    clientId: "cid-cid-cid",
    clientSecret: SECRET,
    retry: false,
    onEvent: (event) => {
      events.push(event);
      otel(event);
    },
  });
  const errors: unknown[] = [];
  const pages: unknown[] = [];
  // The token while it is the one sent; the secret, and a 401 renewing the token, after.
  for (const value of [TOKEN, SECRET]) {
    const paths = [`items/${value}`, `list/${value}`];
    if (value === SECRET) paths.push(`auth/${value}`);
    for (const path of paths) {
      await (await client.fetch(path)).body?.cancel();
      try {
        for await (const page of client.pages(path)) pages.push(page);
      } catch (error) {
        errors.push(error);
      }
    }
  }
  const shown = JSON.stringify(events) + JSON.stringify(spans) +
    JSON.stringify(pages) + Deno.inspect(pages, { depth: 9 });
  equal(shown.includes(SECRET), false);
  equal(shown.includes(TOKEN), false);
  // Shown as the ApiError for the same page shows it.
  const failed = errors[1];
  ok(failed instanceof ApiError);
  const errorPath = failed.url.slice(failed.url.indexOf("/api/")).split("?")[0];
  equal(errorPath, "/api/items/[client_secret]");
  const paths = (type: string) =>
    events.flatMap((e) => e.type === type && "path" in e ? [e.path] : []);
  const lists = [
    "/api/items/[redacted]",
    "/api/list/[redacted]",
    "/api/items/[client_secret]",
    "/api/list/[client_secret]",
    "/api/auth/[client_secret]",
  ];
  deepStrictEqual(new Set(paths("api.request")), new Set(lists));
  deepStrictEqual(paths("api.renewal"), ["/api/auth/[client_secret]"]);
  deepStrictEqual(paths("api.list"), lists);
  equal(spans.filter((s) => s.name === "partner_api.list").length, 5);
  equal(pages.length, 2);
  const urls = pages.map((page) =>
    new URL((page as { request: { url: string } }).request.url).pathname
  );
  deepStrictEqual(urls, [
    "/api/list/[redacted]",
    "/api/list/[client_secret]",
  ]);
});

// Outside review r150 H4: a path the client refuses (`;` is one a server may read as outside the base) was quoted
// whole with the token pasted in it, the one the client had just sent, and the one a renewal replaced.
Deno.test("a path refused before sending shows neither the token the client sends nor the one a renewal replaced, from fetch, pciFetch, list and pages", async () => {
  const { server, environment } = startApi();
  await using _ = { [Symbol.asyncDispose]: () => server.shutdown() };
  const client = createClient({
    environment,
    clientId: "cid-cid-cid",
    clientSecret: SECRET,
    retry: false,
  });
  const refusals: unknown[] = [];
  const refuse = async (token: string) => {
    const path = `items/a;k=${token}`;
    const calls: (() => Promise<unknown>)[] = [
      () => client.fetch(path),
      () => client.pciFetch(path),
      () => client.list(path).next(),
      () => client.pages(path)[Symbol.asyncIterator]().next(),
    ];
    for (const call of calls) {
      await Promise.resolve().then(call).then(
        () => refusals.push("sent"),
        (error) => refusals.push(error),
      );
    }
  };
  await (await client.fetch("list/warm")).body?.cancel(); // TOKEN, sent
  await refuse(TOKEN);
  await (await client.fetch("auth/renew")).body?.cancel(); // 401: renewed
  const renewed = "Renewed-2-abcdefgh";
  await refuse(renewed);
  await refuse(TOKEN); // the token the renewal replaced
  equal(refusals.length, 12);
  for (const error of refusals) {
    ok(error instanceof TypeError);
    equal((error as { option?: string }).option, "path");
    const shown = `${error.message} ${error.stack} ${Deno.inspect(error)}`;
    equal(shown.includes(TOKEN), false);
    equal(shown.includes(renewed), false);
  }
});

// Outside review r150 H5: a token the provider replaced once it ran out, pasted into a path, was shown whole by the
// error and the events (only the current one, and one a 401 refused, were redacted).
Deno.test("the token a renewal replaced once it ran out, pasted into a path, is redacted in the ApiError and the api.request and api.list events", async () => {
  const { server, environment } = startApi();
  await using _ = { [Symbol.asyncDispose]: () => server.shutdown() };
  let now = Date.UTC(2026, 0, 1);
  const events: PartnerApiEvent[] = [];
  const client = createClient({
    environment,
    clientId: "cid-cid-cid",
    clientSecret: SECRET,
    retry: false,
    now: () => now,
    onEvent: (event) => events.push(event),
  });
  await (await client.fetch("list/warm")).body?.cancel(); // TOKEN, sent
  now += 7_200_000; // TOKEN ran out: the next call sends another
  const error = await client.list(`items/${TOKEN}`).next().catch((e) => e);
  ok(error instanceof ApiError);
  const response = await client.fetch(`items/${TOKEN}`);
  await response.body?.cancel();
  equal(response.status, 404);
  const shown = Deno.inspect(error) + JSON.stringify(events);
  equal(shown.includes(TOKEN), false);
  ok(events.some((e) => "path" in e && e.path === "/api/items/[redacted]"));
});

// Outside attack r151 F3, F4: a token percent-encoded in part matched no form of it, and a provider's current token was
// hidden only by the client that had sent it (not by another client of the provider, nor after the caller's getToken).
Deno.test("a provider's current token, before any client sent it or percent-encoded in part, is hidden in refusals, errors and events", async () => {
  const { server, environment } = startApi();
  await using _ = { [Symbol.asyncDispose]: () => server.shutdown() };
  const credentials = { clientId: "cid-cid-cid", clientSecret: SECRET };
  const tokenProvider = createTokenProvider({ ...environment, ...credentials });
  equal((await tokenProvider.getToken()).accessToken, TOKEN); // the caller's own
  const events: PartnerApiEvent[] = [];
  const onEvent = (event: PartnerApiEvent) => events.push(event);
  const client = createClient({ environment, tokenProvider, onEvent });
  const encoded = TOKEN.replace("V", "%56");
  const shown: string[] = [];
  for (const token of [TOKEN, encoded]) {
    for (const path of [`items/a;k=${token}`, `items/${token}`]) {
      const answer = await client.fetch(path).catch((e) => e);
      if (answer instanceof Response) await answer.body?.cancel();
      else {shown.push(
          `${answer.message} ${answer.stack} ${Deno.inspect(answer)}`,
        );}
      const listed = await Promise.resolve().then(() =>
        client.list(path).next()
      )
        .catch((e) => e);
      shown.push(`${listed.message} ${listed.stack} ${Deno.inspect(listed)}`);
    }
  }
  equal(shown.length, 6); // two refusals each of fetch; four of list
  const all = shown.join("\n") + JSON.stringify(events);
  equal(all.includes(TOKEN), false);
  equal(all.includes(encoded), false);
});

// Outside reviews r150 H5 (the rest), r151: a token percent-encoded in full was hidden only while the text held it
// whole; a refusal's echo (cut at 200 characters) held a run of it, as did a path splitting it with a `/` (`%2F`), and a
// double-encoded one (`%2554`, as a server decoding twice reads it) was not decoded.
Deno.test("an access token percent-encoded in full (upper or lower case hex, split by an encoded '/', encoded twice) in a path shows in no refusal of fetch, pciFetch or list, ApiError, api.request or api.list event, or page's request.url", async () => {
  const token =
    "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjbGllbnQtMTIzIn0.Zq8X+kP2m_Lw9RtV4nBc7YhJ3dFg6SaE1uKo5i";
  await using api = loopbackApi(
    token,
    (request) =>
      new URL(request.url).pathname.includes("/list/")
        ? Response.json([])
        : new Response("no", { status: 404 }),
  );
  const events: PartnerApiEvent[] = [];
  const client = createClient({
    environment: api.environment,
    clientId: "cid-cid-cid",
    clientSecret: SECRET,
    retry: false,
    onEvent: (event) => events.push(event),
  });
  await (await client.fetch("list/warm")).body?.cancel(); // the token, sent
  const hex = (text: string) =>
    [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
      .join("").toUpperCase();
  const half = token.length / 2;
  const [upper, lower] = [hex(token), hex(token).toLowerCase()];
  const split = (by: string) =>
    hex(token.slice(0, half)) + by + hex(token.slice(half));
  const shown: string[] = [];
  const show = (thing: unknown) =>
    shown.push(Deno.inspect(thing, { depth: 9 }));
  // Refused before sending (`;`, an encoded `/` or `%25` is a path a server may read as outside the base).
  const refused = [upper, lower, split("%2F"), upper.replaceAll("%", "%25")];
  for (const path of refused.map((encoded) => `items/a;k=${encoded}`)) {
    const calls: (() => Promise<unknown>)[] = [
      () => client.fetch(path),
      () => client.pciFetch(path),
      () => client.list(path).next(),
    ];
    for (const call of calls) {
      const error = await Promise.resolve().then(call).catch((e) => e);
      equal((error as { option?: string }).option, "path");
      show(error);
    }
  }
  // Sent: the ApiError of a list's 404, the events, a page's request.
  for (const encoded of [upper, lower, split("/")]) {
    const error = await client.list(`items/${encoded}`).next().catch((e) => e);
    ok(error instanceof ApiError);
    show(error);
    for await (const page of client.pages(`list/${encoded}`)) show(page);
  }
  equal(shown.length, 12 + 6);
  show(events);
  let read = shown.join("\n");
  for (let i = 0; i < 2; i++) {
    read = read.replace(
      /(?:%[0-9a-f]{2})+/gi,
      (run) => decodeURIComponent(run),
    );
  }
  read = read.replaceAll("/", "");
  const bare = token.replaceAll("/", "");
  for (let at = 0; at + 12 <= bare.length; at++) {
    ok(!read.includes(bare.slice(at, at + 12)), bare.slice(at, at + 12));
  }
});
