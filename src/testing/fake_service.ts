// The fake partner service as a request handler over its state: pure Web
// code, so that any runtime's server can serve it (Deno.serve in
// startFakePartnerApi, node:http on Node and Bun, a Worker's fetch).

import { type FakeRateLimit, rateGate } from "./_fake_rate.ts";
import { defineEnvironment, type Environment } from "../core/environment.ts";
import { checkNumber, requireText } from "../core/_check.ts";
import { QuotaCounter } from "./_quota_counter.ts";
import {
  appendTransactions,
  generateLists,
  type ListSizes,
} from "./_list_data.ts";
import {
  type FakeFault,
  faultyAnswer,
  json,
  pause,
  randomText,
} from "./_fake_http.ts";
import { FakeTokenEndpoint } from "./_fake_token.ts";
import {
  answerCard,
  answerList,
  bearerToken,
  unauthorized,
} from "./_fake_answers.ts";

export type { FakeFault } from "./_fake_http.ts";
export type { FakeRateLimit } from "./_fake_rate.ts";
/** Counts of generated items per list of the fake. */
export type { ListSizes };

/**
 * Options of {@linkcode createFakePartnerService} (and of
 * `startFakePartnerApi`, which serves one).
 *
 * @example A fake with a tight quota and slow pages
 * ```ts
 * import { type FakePartnerServiceOptions, startFakePartnerApi } from "@partner-api/client/testing";
 *
 * const options: FakePartnerServiceOptions = { quota: { perHour: 3 }, latency: 5, tokenLifetime: 60_000 };
 * await using api = await startFakePartnerApi(options);
 * if (api.environment.baseUrl.hostname !== "127.0.0.1") throw new Error();
 * ```
 */
export interface FakePartnerServiceOptions {
  /**
   * Lifetime of issued tokens, in ms, like every duration of the fake; the
   * answer's `expires_in` is it in whole seconds (at least 1).
   *
   * @default {86400000}
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
   * A rate limit on API requests, as the service has (900 per 5 minutes per
   * IP): past it, 429 with the service's body, e.g. `{"error":"Sending more
   * than 900 requests in 5 minutes is not allowed"}`, and no `Retry-After`.
   *
   * @default {none}
   */
  apiRateLimit?: FakeRateLimit;
  /**
   * How a list page is sent: `"object"` as `{ <list name>: [...], page,
   * limit }`, `"array"` as a bare JSON array.
   *
   * @default {"object"}
   */
  listEnvelope?: "object" | "array";
  /**
   * Fixed credentials, e.g. to keep a `.env` valid across restarts.
   *
   * @default {random ones: fake-client-… and fake-secret-…}
   */
  credentials?: Partial<FakeCredentials>;
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
 * What a test reads and scripts of a fake, served or not.
 *
 * @example Scripting a fault and counting requests
 * ```ts
 * import { createFakePartnerService, type FakeControls } from "@partner-api/client/testing";
 *
 * const fake: FakeControls = createFakePartnerService();
 * fake.injectTokenFaults({ kind: "status", status: 503 });
 * if (fake.tokenRequests !== 0) throw new Error();
 * ```
 */
export interface FakeControls {
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
}

/**
 * The fake service without a server: answers requests to its two origins
 * (the main one with the token endpoint and the API, and the card-data one)
 * from its state. Serve it with any runtime's server.
 *
 * @example Answering a request without any server
 * ```ts
 * import { createFakePartnerService } from "@partner-api/client/testing";
 *
 * const service = createFakePartnerService();
 * const answer = await service.handle(new Request("http://fake/api/organizations"));
 * await answer.body?.cancel();
 * if (answer.status !== 401) throw new Error("a token is needed");
 * ```
 */
export interface FakePartnerService extends FakeControls {
  /**
   * Answers a request to the main origin: the token endpoint at
   * `/oauth/token`, the lists at `/api/<name>`.
   */
  handle(request: Request): Promise<Response>;
  /** Answers a request to the card-data origin: `/api/cards/<cardholderID>`. */
  handlePci(request: Request): Promise<Response>;
  /** The environment of the service served at these two origins. */
  environmentAt(origin: string, pciOrigin: string): Environment;
  /** Ends every scripted or configured delay at once, e.g. before a server stops. */
  close(): void;
}

const CONTEXT = "Cannot start fake partner API";
const AUDIENCE = "https://partner-api.fake";

/**
 * Creates the fake service: token endpoint (validates the request like the
 * real one, issues random opaque tokens that expire after `tokenLifetime`,
 * counts a per-hour and a per-day quota on the UTC hour and day of its clock,
 * sends `Idp-Client-Quota-Limit` with `r` as it stands after each answer,
 * 429 past the quota), list endpoints that page and sort generated data and
 * demand a valid bearer token, a card-data endpoint, and scripted faults.
 *
 * @param options Token lifetime, quota, clock, data, latency and faults.
 * @returns The service; nothing listens until you serve it.
 * @throws {RangeError} When a lifetime, quota, size or latency is out of range.
 *
 * @example Serving it with Deno.serve on a port of your choice
 * ```ts
 * import { createFakePartnerService } from "@partner-api/client/testing";
 *
 * const service = createFakePartnerService({ tokenLifetime: 60_000 });
 * const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, service.handle);
 * const origin = `http://127.0.0.1:${server.addr.port}`;
 * const environment = service.environmentAt(origin, origin);
 * if (environment.tokenUrl.href !== `${origin}/oauth/token`) throw new Error();
 * service.close();
 * await server.shutdown();
 * ```
 */
export function createFakePartnerService(
  options: FakePartnerServiceOptions = {},
): FakePartnerService {
  const { now, credentials, endpoint, lists, latency, listEnvelope } =
    serviceSetup(options);
  const rateLimited = rateGate(options.apiRateLimit, now, CONTEXT);
  const tokenFaults: FakeFault[] = [...(options.faults ?? [])];
  const apiFaults: FakeFault[] = [];
  const closing = new AbortController();
  const decorate = endpoint.withQuota.bind(endpoint);
  const counts = { tokenRequests: 0, apiRequests: 0 };

  async function answerApi(
    request: Request,
    route: () => Response,
  ): Promise<Response> {
    counts.apiRequests++;
    await pause(latency, closing.signal);
    const refused = rateLimited();
    if (refused !== undefined) return refused;
    const fault = apiFaults.shift();
    const answer = () => {
      const token = bearerToken(request);
      if (token === undefined || !endpoint.isValid(token)) {
        return unauthorized();
      }
      if (request.method !== "GET") {
        return json(405, { error: "method_not_allowed" });
      }
      return route();
    };
    return fault
      ? await faultyAnswer(fault, answer, decorate, closing.signal)
      : answer();
  }

  return {
    credentials,
    get tokenRequests() {
      return counts.tokenRequests;
    },
    get tokensIssued() {
      return endpoint.tokensIssued;
    },
    get apiRequests() {
      return counts.apiRequests;
    },
    injectTokenFaults: (...more) => void tokenFaults.push(...more),
    injectApiFaults: (...more) => void apiFaults.push(...more),
    insertTransactions: (added) =>
      appendTransactions(lists.get("transactions")!, added, now()),
    revokeTokens: () => endpoint.revoke(),
    isValidToken: (accessToken) => endpoint.isValid(accessToken),
    handle(request) {
      const { pathname } = new URL(request.url);
      if (pathname === "/oauth/token") {
        counts.tokenRequests++;
        const fault = tokenFaults.shift();
        const answer = () => endpoint.answer(request);
        return fault
          ? faultyAnswer(fault, answer, decorate, closing.signal)
          : answer();
      }
      const list = /^\/api\/([a-z]+)$/.exec(pathname);
      if (list) {
        return answerApi(
          request,
          () => answerList(lists, listEnvelope, request, list[1]!),
        );
      }
      return Promise.resolve(json(404, { error: "not_found" }));
    },
    handlePci(request) {
      // Routes by regular expression, not URLPattern: Node 20 has none.
      const card = /^\/api\/cards\/([A-Za-z0-9_]+)$/.exec(
        new URL(request.url).pathname,
      );
      if (card) return answerApi(request, () => answerCard(lists, card[1]!));
      return Promise.resolve(json(404, { error: "not_found" }));
    },
    environmentAt: (origin, pciOrigin) =>
      defineEnvironment({
        baseUrl: `${origin}/api/`,
        pciBaseUrl: `${pciOrigin}/api/`,
        tokenUrl: `${origin}/oauth/token`,
        audience: AUDIENCE,
      }),
    close: () => closing.abort(),
  };
}

/** The service's parts, from its checked options. */
function serviceSetup(options: FakePartnerServiceOptions) {
  const now = options.now ?? Date.now;
  const given = (field: "clientId" | "clientSecret", made: string) => {
    const value = options.credentials?.[field];
    return value === undefined
      ? made
      : requireText(value, CONTEXT, `credentials.${field}`);
  };
  const credentials: FakeCredentials = Object.freeze({
    clientId: given("clientId", `fake-client-${randomText(9)}`),
    clientSecret: given("clientSecret", `fake-secret-${randomText(24)}`),
  });
  const endpoint = new FakeTokenEndpoint({
    lifetime: checkNumber(
      options.tokenLifetime,
      86_400_000,
      "positive integer",
      CONTEXT,
      "tokenLifetime",
    ),
    quota: new QuotaCounter(
      count(options.quota?.perHour, 1000, "quota.perHour"),
      count(options.quota?.perDay, 10_000, "quota.perDay"),
      now,
    ),
    now,
    ...credentials,
    audience: AUDIENCE,
    retryAfter: options.retryAfter ?? false,
    bodyFormats: options.tokenBodyFormats ?? ["json", "form"],
  });
  const lists = generateLists({
    organizations: count(
      options.items?.organizations,
      25,
      "items.organizations",
    ),
    transactions: count(options.items?.transactions, 500, "items.transactions"),
    cardholders: count(options.items?.cardholders, 120, "items.cardholders"),
  }, options.seed ?? 1);
  return {
    now,
    credentials,
    endpoint,
    lists,
    latency: count(options.latency, 0, "latency"),
    listEnvelope: options.listEnvelope ?? "object",
  };
}

function count(value: number | undefined, fallback: number, field: string) {
  return checkNumber(value, fallback, "non-negative integer", CONTEXT, field);
}
