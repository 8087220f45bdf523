// The fake partner service: a Deno.serve server on 127.0.0.1.

import { defineEnvironment, type Environment } from "../environment.ts";
import { formatQuotaHeader, QUOTA_HEADER } from "../quota.ts";
import { delay } from "../_retry.ts";
import { checkNumber } from "../_check.ts";
import { QuotaCounter } from "./_quota_counter.ts";
import {
  appendTransactions,
  BadQuery,
  generateLists,
  type ListSizes,
  pageOf,
} from "./_list_data.ts";

/** Counts of generated items per list of the fake. */
export type { ListSizes };

/**
 * A scripted misbehaviour, applied to one request in the order given: token
 * faults to token requests, API faults to API requests (lists and card data).
 *
 * - `status`: answers with that status and an OAuth error body, optionally
 *   with `Retry-After`.
 * - `delay`: waits `ms` milliseconds, then answers normally.
 * - `drop`: starts a 200 answer and cuts the connection mid-body.
 * - `body`: answers 200 (or `status`) with exactly this body, e.g. broken JSON.
 *
 * `headers` are set last, over the quota header if they name it.
 *
 * @example A flaky token endpoint
 * ```ts
 * import { type FakeFault, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createTokenProvider } from "@partner-api/client/token";
 *
 * const faults: FakeFault[] = [{ kind: "drop" }, { kind: "status", status: 503 }];
 * await using api = await startFakePartnerApi({ faults });
 * const provider = createTokenProvider({ ...api.environment, ...api.credentials, retry: { initialDelay: 1 } });
 * await provider.getToken(); // retried past both faults
 * if (api.tokenRequests !== 3) throw new Error();
 * ```
 */
export type FakeFault =
  | {
    readonly kind: "status";
    readonly status: number;
    readonly retryAfter?: number;
    readonly headers?: Readonly<Record<string, string>>;
  }
  | { readonly kind: "delay"; readonly ms: number }
  | { readonly kind: "drop" }
  | {
    readonly kind: "body";
    readonly body: string;
    readonly status?: number;
    readonly headers?: Readonly<Record<string, string>>;
  };

/**
 * Options of {@linkcode startFakePartnerApi}.
 *
 * @example A fake with a tight quota and slow pages
 * ```ts
 * import { type FakePartnerApiOptions, startFakePartnerApi } from "@partner-api/client/testing";
 *
 * const options: FakePartnerApiOptions = { quota: { perHour: 3 }, latency: 5, tokenLifetime: 60 };
 * await using api = await startFakePartnerApi(options);
 * if (api.environment.baseUrl.hostname !== "127.0.0.1") throw new Error();
 * ```
 */
export interface FakePartnerApiOptions {
  /**
   * Lifetime of issued tokens, in seconds.
   *
   * @default {86400}
   */
  tokenLifetime?: number;
  /**
   * Token requests allowed per UTC hour and per UTC day.
   *
   * @default {{ perHour: 1000, perDay: 10000 }}
   */
  quota?: { perHour?: number; perDay?: number };
  /**
   * The fake's clock in epoch ms: token expiry and quota windows follow it.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Whether a 429 carries `Retry-After` (the real service is not known to).
   *
   * @default {false}
   */
  retryAfter?: boolean;
  /**
   * Faults for the first token requests, in order.
   *
   * @default {[]}
   */
  faults?: readonly FakeFault[];
  /**
   * Generated items per list.
   *
   * @default {{ organizations: 25, transactions: 500, cardholders: 120 }}
   */
  items?: Partial<ListSizes>;
  /**
   * Seed of the generated data: the same seed gives the same items.
   *
   * @default {1}
   */
  seed?: number;
  /**
   * Milliseconds each API request (list or card data) takes to answer.
   *
   * @default {0}
   */
  latency?: number;
  /**
   * How a list page is sent: `"object"` as `{ <list name>: [...], page,
   * limit }`, `"array"` as a bare JSON array.
   *
   * @default {"object"}
   */
  listEnvelope?: "object" | "array";
  /**
   * Body formats the token endpoint accepts: JSON, as the service specifies,
   * and form-encoded, as most OAuth servers do. Restrict it to test what a
   * client sends.
   *
   * @default {["json", "form"]}
   */
  tokenBodyFormats?: readonly ("json" | "form")[];
}

/**
 * Credentials the fake accepts: a frozen object.
 *
 * @example Spreading the credentials into options
 * ```ts
 * import { type FakeCredentials, startFakePartnerApi } from "@partner-api/client/testing";
 *
 * await using api = await startFakePartnerApi();
 * const credentials: FakeCredentials = api.credentials;
 * if (!credentials.clientId.startsWith("fake-client-")) throw new Error();
 * ```
 */
export interface FakeCredentials {
  /** The client id. */
  readonly clientId: string;
  /** The client secret. */
  readonly clientSecret: string;
}

/**
 * A running fake of the partner service.
 *
 * @example Checking that code renews a revoked token
 * ```ts
 * import { type FakePartnerApi, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 *
 * await using api: FakePartnerApi = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await (await client.fetch("organizations")).body?.cancel();
 * api.revokeTokens();
 * const response = await client.fetch("organizations");
 * await response.body?.cancel();
 * if (response.status !== 200 || api.tokenRequests !== 2) throw new Error();
 * ```
 */
export interface FakePartnerApi extends AsyncDisposable {
  /** Its environment, on `http://127.0.0.1:<port>/`. */
  readonly environment: Environment;
  /** The credentials it accepts. */
  readonly credentials: FakeCredentials;
  /** Requests to the token endpoint so far, answered or rejected. */
  readonly tokenRequests: number;
  /** Tokens issued so far. */
  readonly tokensIssued: number;
  /** Requests to the API and card-data origins so far, answered or rejected. */
  readonly apiRequests: number;
  /** Queues faults for the next token requests, after those already queued. */
  injectTokenFaults(...faults: FakeFault[]): void;
  /** Queues faults for the next API requests, after those already queued. */
  injectApiFaults(...faults: FakeFault[]): void;
  /**
   * Adds `count` transactions newer than all others, as if created now: the
   * head of a list sorted by `creationDate` DESC moves while you page.
   */
  insertTransactions(count: number): void;
  /** Makes every token issued so far invalid, as if the service revoked them. */
  revokeTokens(): void;
  /** Whether `accessToken` is one the fake issued and still accepts. */
  isValidToken(accessToken: string): boolean;
  /** Stops the server and waits until it has. */
  close(): Promise<void>;
}

const TOKEN_FIELDS = ["audience", "client_id", "client_secret", "grant_type"];

function randomText(bytes: number): string {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...data)).replace(
    /[+/=]/g,
    (c) => c === "+" ? "-" : c === "/" ? "_" : "",
  );
}

function count(
  value: number | undefined,
  fallback: number,
  field: string,
): number {
  return checkNumber(
    value,
    fallback,
    "non-negative integer",
    "Cannot start fake partner API",
    field,
  );
}

function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json",
      "cache-control": "no-store",
      ...headers,
    },
  });
}

function oauthError(status: number, error: string, description: string) {
  return json(status, { error, error_description: description });
}

/** A 200 answer whose connection is cut after a few bytes of its body. */
function droppedAnswer(): Response {
  const start = new TextEncoder().encode('{"access_token":"');
  return new Response(
    new ReadableStream({
      pull(controller) {
        controller.enqueue(start);
        controller.close();
      },
    }),
    {
      headers: { "content-type": "application/json", "content-length": "512" },
    },
  );
}

const MEDIA_TYPES = {
  json: "application/json",
  form: "application/x-www-form-urlencoded",
};

async function readTokenBody(
  request: Request,
  formats: readonly ("json" | "form")[],
): Promise<Record<string, unknown> | string> {
  if (request.method !== "POST") return "the token endpoint takes POST";
  const type = request.headers.get("content-type")?.split(";")[0]?.trim()
    .toLowerCase();
  const format = formats.find((name) => MEDIA_TYPES[name] === type);
  if (format === undefined) {
    return `Content-Type must be ${
      formats.map((name) => MEDIA_TYPES[name]).join(" or ")
    }`;
  }
  let body: unknown;
  try {
    body = format === "json"
      ? await request.json()
      : Object.fromEntries(new URLSearchParams(await request.text()));
  } catch {
    return "the body is not JSON";
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return "the body must be a JSON object";
  }
  const fields = Object.keys(body).sort();
  if (fields.join() !== TOKEN_FIELDS.join()) {
    return `the body must have exactly ${TOKEN_FIELDS.join(", ")}`;
  }
  return body as Record<string, unknown>;
}

/**
 * Starts a fake of the partner service on 127.0.0.1 with a free port.
 *
 * The token endpoint validates the request like the real one (400
 * `invalid_request` for a bad body or grant type, 401 `access_denied` for
 * wrong credentials or audience), issues random opaque tokens that expire
 * after `tokenLifetime`, counts a per-hour and a per-day quota that reset on
 * the UTC hour and day of its clock, sends `Idp-Client-Quota-Limit` on every
 * answer (with `r` as it stands after that answer) and answers 429 past the
 * quota. Faults can be scripted.
 *
 * @param options Token lifetime, quota, clock and faults.
 * @returns The running fake; close it with `close()` or `await using`.
 * @throws {RangeError} When a lifetime or quota is not a non-negative integer.
 *
 * @example Testing code against the fake
 * ```ts
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { requestToken } from "@partner-api/client/token";
 *
 * await using api = await startFakePartnerApi({ tokenLifetime: 60 });
 * const token = await requestToken({ ...api.environment, ...api.credentials });
 * if (token.expiresIn !== 60 || !api.isValidToken(token.accessToken)) throw new Error();
 * ```
 */
// deno-lint-ignore require-await -- async so that bad options reject, like every later failure
export async function startFakePartnerApi(
  options: FakePartnerApiOptions = {},
): Promise<FakePartnerApi> {
  const lifetime = checkNumber(
    options.tokenLifetime,
    86_400,
    "positive integer",
    "Cannot start fake partner API",
    "tokenLifetime",
  );
  const now = options.now ?? Date.now;
  const quota = new QuotaCounter(
    count(options.quota?.perHour, 1000, "quota.perHour"),
    count(options.quota?.perDay, 10_000, "quota.perDay"),
    now,
  );
  const credentials: FakeCredentials = Object.freeze({
    clientId: `fake-client-${randomText(9)}`,
    clientSecret: `fake-secret-${randomText(24)}`,
  });
  const audience = "https://partner-api.fake";
  const tokenFaults: FakeFault[] = [...(options.faults ?? [])];
  const apiFaults: FakeFault[] = [];
  const tokens = new Map<string, number>();
  const closing = new AbortController();
  const lists = generateLists({
    organizations: count(
      options.items?.organizations,
      25,
      "items.organizations",
    ),
    transactions: count(options.items?.transactions, 500, "items.transactions"),
    cardholders: count(options.items?.cardholders, 120, "items.cardholders"),
  }, options.seed ?? 1);
  const latency = count(options.latency, 0, "latency");
  const listEnvelope = options.listEnvelope ?? "object";
  const bodyFormats = options.tokenBodyFormats ?? ["json", "form"];
  let tokenRequests = 0;
  let tokensIssued = 0;
  let apiRequests = 0;

  function quotaHeaders(): Record<string, string> {
    return { [QUOTA_HEADER]: formatQuotaHeader(quota.buckets()) };
  }

  function withQuota(
    response: Response,
    headers: Readonly<Record<string, string>> = {},
  ): Response {
    for (const [name, value] of Object.entries(quotaHeaders())) {
      response.headers.set(name, value);
    }
    for (const [name, value] of Object.entries(headers)) {
      response.headers.set(name, value);
    }
    return response;
  }

  function issueToken(): Response {
    if (!quota.available()) {
      const buckets = quota.buckets();
      const wait = Math.max(
        ...buckets.filter((b) => b.remaining === 0).map((b) => b.resetAfter),
      );
      const response = oauthError(
        429,
        "too_many_requests",
        "Client quota exceeded",
      );
      if (options.retryAfter) response.headers.set("retry-after", String(wait));
      return withQuota(response);
    }
    quota.spend();
    tokensIssued++;
    const accessToken = randomText(32);
    tokens.set(accessToken, now() + lifetime * 1000);
    return json(200, {
      access_token: accessToken,
      expires_in: lifetime,
      token_type: "Bearer",
    }, quotaHeaders());
  }

  async function answerToken(request: Request): Promise<Response> {
    const body = await readTokenBody(request, bodyFormats);
    if (typeof body === "string") {
      const status = request.method === "POST" ? 400 : 405;
      return withQuota(oauthError(status, "invalid_request", body));
    }
    if (body.grant_type !== "client_credentials") {
      return withQuota(
        oauthError(
          400,
          "invalid_request",
          "grant_type must be client_credentials",
        ),
      );
    }
    if (
      body.client_id !== credentials.clientId ||
      body.client_secret !== credentials.clientSecret ||
      body.audience !== audience
    ) {
      return withQuota(
        oauthError(401, "access_denied", "Unauthorized"),
      );
    }
    return issueToken();
  }

  async function faultyAnswer(
    fault: FakeFault,
    answer: () => Response | Promise<Response>,
  ): Promise<Response> {
    switch (fault.kind) {
      case "status": {
        const response = withQuota(
          oauthError(fault.status, "server_error", "Injected fault"),
          fault.headers,
        );
        if (fault.retryAfter !== undefined) {
          response.headers.set("retry-after", String(fault.retryAfter));
        }
        return response;
      }
      case "delay":
        await pause(fault.ms);
        return await answer();
      case "drop":
        return droppedAnswer();
      case "body":
        return withQuota(
          new Response(fault.body, {
            status: fault.status ?? 200,
            headers: { "content-type": "application/json" },
          }),
          fault.headers,
        );
    }
  }

  function pause(ms: number): Promise<void> {
    // Only close() cuts a pause short: a client giving up must not change
    // what the fake does, as it would not change a real server.
    return ms > 0
      ? delay(ms, closing.signal).catch(() => {})
      : Promise.resolve();
  }

  function bearerToken(request: Request): string | undefined {
    const match = /^Bearer ([^\s]+)$/i.exec(
      request.headers.get("authorization") ?? "",
    );
    return match?.[1];
  }

  function unauthorized(): Response {
    return json(401, { error: "invalid_token" }, {
      "www-authenticate": 'Bearer error="invalid_token"',
    });
  }

  function answerList(request: Request, name: string): Response {
    const resource = lists.get(name);
    if (resource === undefined) return json(404, { error: "not_found" });
    const params = new URL(request.url).searchParams;
    let page: Record<string, unknown>[];
    try {
      page = pageOf(resource, params);
    } catch (error) {
      if (!(error instanceof BadQuery)) throw error;
      return json(400, { error: "bad_request", message: error.message });
    }
    if (listEnvelope === "array") return json(200, page);
    return json(200, {
      [name]: page,
      page: Number(params.get("page") ?? 1),
      limit: Number(params.get("limit") ?? 50),
    });
  }

  function answerCard(cardholderID: string): Response {
    const holder = lists.get("cardholders")?.items.find((item) =>
      item.cardholderID === cardholderID
    );
    if (holder === undefined) return json(404, { error: "not_found" });
    const digits = cardholderID.replace(/\D/g, "").padStart(12, "0");
    return json(200, {
      cardholderID,
      pan: `4000${digits}`,
      expiry: "12/29",
      name: holder.name,
    });
  }

  async function answerApi(
    request: Request,
    route: () => Response,
  ): Promise<Response> {
    apiRequests++;
    await pause(latency);
    const fault = apiFaults.shift();
    const answer = () => {
      const token = bearerToken(request);
      if (token === undefined || !isValidToken(token)) return unauthorized();
      if (request.method !== "GET") {
        return json(405, { error: "method_not_allowed" });
      }
      return route();
    };
    return fault ? await faultyAnswer(fault, answer) : await answer();
  }

  function handleMain(request: Request): Promise<Response> | Response {
    const { pathname } = new URL(request.url);
    if (pathname === "/oauth/token") {
      tokenRequests++;
      const fault = tokenFaults.shift();
      const answer = () => answerToken(request);
      return fault ? faultyAnswer(fault, answer) : answer();
    }
    const list = /^\/api\/([a-z]+)$/.exec(pathname);
    if (list) return answerApi(request, () => answerList(request, list[1]!));
    return json(404, { error: "not_found" });
  }

  function handlePci(request: Request): Promise<Response> | Response {
    const card = /^\/api\/cards\/([A-Za-z0-9_]+)$/.exec(
      new URL(request.url).pathname,
    );
    if (card) return answerApi(request, () => answerCard(card[1]!));
    return json(404, { error: "not_found" });
  }

  function isValidToken(accessToken: string): boolean {
    const expiresAt = tokens.get(accessToken);
    return expiresAt !== undefined && now() < expiresAt;
  }

  const serve = (handler: Deno.ServeHandler) =>
    Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen: () => {},
      onError: () => json(500, { error: "server_error" }),
    }, handler);
  const main = serve(handleMain);
  const pci = serve(handlePci);
  const origin = `http://127.0.0.1:${main.addr.port}`;
  const environment = defineEnvironment({
    baseUrl: `${origin}/api/`,
    pciBaseUrl: `http://127.0.0.1:${pci.addr.port}/api/`,
    tokenUrl: `${origin}/oauth/token`,
    audience,
  });

  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      closing.abort();
      await Promise.all([main.shutdown(), pci.shutdown()]);
    })();
    return closed;
  };

  return {
    environment,
    credentials,
    get tokenRequests() {
      return tokenRequests;
    },
    get tokensIssued() {
      return tokensIssued;
    },
    get apiRequests() {
      return apiRequests;
    },
    injectTokenFaults(...more: FakeFault[]) {
      tokenFaults.push(...more);
    },
    injectApiFaults(...more: FakeFault[]) {
      apiFaults.push(...more);
    },
    insertTransactions(count: number) {
      appendTransactions(lists.get("transactions")!, count, now());
    },
    revokeTokens() {
      tokens.clear();
    },
    isValidToken,
    close,
    [Symbol.asyncDispose]: close,
  };
}
