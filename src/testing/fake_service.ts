// The fake partner service as a request handler: pure Web code, so that any runtime's server serves it.

import { rateGate } from "./_fake_rate.ts";
import { defineEnvironment, type Environment } from "../core/environment.ts";
import {
  checkAtMost,
  checkedReadings,
  checkNumber,
  type NumberRule,
  oneOf,
  requireKnownOptions,
  requireText,
  typeError,
} from "../core/_check.ts";
import { answerList, generateLists, seededRandom } from "./_list_data.ts";
import {
  appendItems,
  churner,
  insertItem,
  listNamed,
  removeItem,
  updateItem,
} from "./_list_churn.ts";
import {
  checkedFaults,
  faultyAnswer,
  json,
  pause,
  randomText,
  withHeaders,
} from "./_fake_http.ts";
import { fakeTokenEndpoint, quotaCounter } from "./_fake_token.ts";
import { SERVICE_OPTIONS } from "./_service_options.ts";
import type {
  FakeCredentials,
  FakeFault,
  FakePartnerServiceOptions,
  ListSizes,
} from "./fake_options.ts";

/**
 * What a test reads and scripts of a fake, served or not.
 *
 * @example Scripting a fault and counting requests
 * ```ts
 * import { type FakeControls, startFakePartnerApi } from "@partner-api/client/testing";
 * import { requestToken } from "@partner-api/client/token";
 * import { equal, rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi();
 * const fake: FakeControls = api;
 * fake.injectTokenFaults({ kind: "status", status: 503 });
 * await rejects(requestToken({ ...api.environment, ...api.credentials }), { status: 503 });
 * equal(fake.tokenRequests, 1);
 * equal(fake.tokensIssued, 0);
 * ```
 */
export interface FakeControls {
  /** The credentials it accepts. */
  readonly credentials: FakeCredentials;
  /** Requests to the token endpoint so far, answered or rejected. */
  readonly tokenRequests: number;
  /** Tokens issued so far. */
  readonly tokensIssued: number;
  /** Requests for a list of the API and card-data origins so far, answered or rejected (a path naming none: not). */
  readonly apiRequests: number;
  /**
   * Queues faults for the next token requests, after those already queued.
   * @throws {RangeError} (`option: "faults[i].ms"`, `"faults[i].retryAfter"`, `"faults[i].status"`) For a delay over 2,147,483,647 ms, a `retryAfter` over 2,147,483 s, a status outside 200 to 599 or without a body (204, 205, 304).
   * @throws {TypeError} (`option: "faults[i]"`, `"faults[i].kind"`, `"faults[i].status"`, `"faults[i].body"`, `"faults[i].headers"`) For a fault that is no object, of no known kind, a status fault without its status, a body fault whose body is no string, headers no `Headers` takes.
   */
  injectTokenFaults(...faults: FakeFault[]): void;
  /** Queues faults for the next API requests, after those already queued, checked as by `injectTokenFaults`. */
  injectApiFaults(...faults: FakeFault[]): void;
  /**
   * Adds `count` transactions after all others, as if created now (the head of `DESC` moves): dated from the newest up
   * to the fake's clock, never after it (at the newest's date where the clock is behind it: a tie sorts them after by id).
   * @throws {RangeError} (`option: "count"`) For a count that is not a non-negative integer.
   */
  insertTransactions(count: number): void;
  /**
   * Puts `item` into the list named `list` (e.g. `"transactions"`), where its fields place it.
   * @throws {TypeError} For an unknown list (`option: "list"`), an item without the list's id
   * field, or an id already there (`option: "item"`).
   */
  insert(list: string, item: Readonly<Record<string, string | number>>): void;
  /**
   * Takes the item with `id` out of the list named `list`.
   * @returns Whether it was there.
   * @throws {TypeError} (`option: "list"`) For an unknown list.
   */
  remove(list: string, id: string): boolean;
  /**
   * Sets `fields` on the item with `id` of the list named `list`; it moves where its new values place it.
   * @returns Whether it was there.
   * @throws {TypeError} For an unknown list (`option: "list"`), fields that are not strings or
   * numbers, or a change of the id (`option: "fields"`).
   */
  update(
    list: string,
    id: string,
    fields: Readonly<Record<string, string | number>>,
  ): boolean;
  /** Makes every token issued so far invalid, as if the service revoked them. */
  revokeTokens(): void;
  /** Whether `accessToken` is one the fake issued and still accepts. */
  isValidToken(accessToken: string): boolean;
}

/**
 * The fake service without a server: answers its main and card-data origins; serve it with any server.
 *
 * @example Answering a request without any server
 * ```ts
 * import { createFakePartnerService } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * const service = createFakePartnerService();
 * const answer = await service.handle(new Request("http://fake/api/organizations"));
 * await answer.body?.cancel();
 * equal(answer.status, 401); // a token is needed
 * equal(service.apiRequests, 1);
 * ```
 */
export interface FakePartnerService extends FakeControls {
  /** Answers a request to the main origin: the token endpoint at `/oauth/token`, lists at `/api/<name>`. */
  handle(request: Request): Promise<Response>;
  /** Answers a request to the card-data origin: `/api/cards/<cardholderID>`. */
  handlePci(request: Request): Promise<Response>;
  /** The environment of `handle` served at `origin` and `handlePci` at `pciOrigin`, its own (no trailing `/`). */
  environmentAt(origin: string, pciOrigin: string): Environment;
  /** Ends every scripted or configured delay at once, e.g. before a server stops. */
  close(): void;
}

const CONTEXT = "Cannot start fake partner API";
const AUDIENCE = "https://partner-api.fake";
const BEYOND = ["refuse", "cut"] as const;
const WHOLE = "whole time in ms, at most 2147483647";
const MS = `positive ${WHOLE}` as const;

/**
 * Creates the fake service that `startFakePartnerApi` serves (see there for what it answers).
 * @returns The service; nothing listens until you serve it.
 * @throws {RangeError} (`option`) When a lifetime, quota, size, seed (an integer) or time (≤ 2,147,483,647 ms) is out of range.
 * @throws {TypeError} (`option`) When `now` is not a function, a credential not a non-empty string,
 * `retryAfter` not a boolean, `beyondMaxLimit` neither `"refuse"` nor `"cut"`, `apiRateLimit` lacks `requests` or `interval`,
 * `tokenBodyFormats` is empty or holds other than `"json"` and `"form"`, or `faults` is not an array.
 *
 * @example Serving it with Deno.serve on a port of your choice
 * ```ts
 * import { createFakePartnerService } from "@partner-api/client/testing";
 * import { requestToken } from "@partner-api/client/token";
 * import { equal } from "node:assert/strict";
 *
 * const service = createFakePartnerService({ tokenLifetime: 60_000 });
 * const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, service.handle);
 * const origin = `http://127.0.0.1:${server.addr.port}`;
 * const environment = service.environmentAt(origin, origin);
 * const token = await requestToken({ ...environment, ...service.credentials });
 * equal(token.expiresIn, 60);
 * service.close();
 * await server.shutdown();
 * ```
 */
export function createFakePartnerService(
  options: FakePartnerServiceOptions = {},
): FakePartnerService {
  const state = serviceState(options);
  const { now, credentials, endpoint, lists } = state;
  const inject = (queue: FakeFault[], what: string) => (...more: FakeFault[]) =>
    void queue.push(...checkedFaults(more, `Cannot inject ${what} faults`));
  return {
    credentials,
    get tokenRequests() {
      return state.counts.tokenRequests;
    },
    get tokensIssued() {
      return endpoint.tokensIssued;
    },
    get apiRequests() {
      return state.counts.apiRequests;
    },
    injectTokenFaults: inject(state.tokenFaults, "token"),
    injectApiFaults: inject(state.apiFaults, "API"),
    insertTransactions: (added) => {
      const rule = "non-negative integer";
      const context = "Cannot insert transactions";
      const count = checkNumber(added, undefined, rule, context, "count");
      const transactions = lists.get("transactions")!;
      const random = seededRandom(transactions.serial);
      appendItems(transactions, count, now(), random);
    },
    insert: (list, item) => insertItem(listNamed(lists, list), item),
    remove: (list, id) => removeItem(listNamed(lists, list), id),
    update: (list, id, fields) =>
      updateItem(listNamed(lists, list), id, fields),
    revokeTokens: () => endpoint.revoke(),
    isValidToken: (accessToken) => endpoint.isValid(accessToken),
    handle: (request) => handleMain(state, request),
    handlePci: (request) => handlePci(state, request),
    environmentAt: (origin, pciOrigin) =>
      defineEnvironment({
        baseUrl: `${origin}/api/`,
        pciBaseUrl: `${pciOrigin}/api/`,
        tokenUrl: `${origin}/oauth/token`,
        audience: AUDIENCE,
      }),
    close: () => state.closing.abort(),
  };
}

type ServiceState = ReturnType<typeof serviceState>;

/** The main origin: the token endpoint and the lists. */
function handleMain(state: ServiceState, request: Request): Promise<Response> {
  const { pathname } = new URL(request.url);
  if (pathname === "/oauth/token") {
    state.counts.tokenRequests++;
    const answer = () => state.endpoint.answer(request);
    return faultyAnswer(state.tokenFaults.shift(), answer, state);
  }
  const list = (name: string) => answerList(state, request, name);
  return answerApi(state, request, /^\/api\/([a-z]+)$/, list);
}

/** The card-data origin: a cardholder's card data. */
function handlePci(state: ServiceState, request: Request): Promise<Response> {
  return answerApi(state, request, /^\/api\/cards\/(\w+)$/, (card) => {
    const holder = state.lists.get("cardholders")?.items.find((item) =>
      item.cardholderID === card
    );
    if (holder === undefined) return json(404, { error: "not_found" });
    return json(200, {
      cardholderID: card,
      pan: `4000${card.replace(/\D/g, "").padStart(12, "0")}`,
      expiry: "12/29",
      name: holder.name,
    });
  });
}

/** An API request to a path `pattern` matches (else an uncounted 404): latency, the rate limit, a fault, the token, `route`. */
async function answerApi(
  state: ServiceState,
  request: Request,
  pattern: RegExp,
  route: (name: string) => Response,
): Promise<Response> {
  // Routes by regular expression, not URLPattern: Node 20 has none.
  const name = pattern.exec(new URL(request.url).pathname)?.[1];
  if (name === undefined) return json(404, { error: "not_found" });
  state.counts.apiRequests++;
  await pause(state.latency, state.closing.signal);
  const refused = state.rateLimited();
  if (refused !== undefined) return refused;
  const answer = () => {
    const header = request.headers.get("authorization") ?? "";
    const token = /^Bearer ([^\s]+)$/i.exec(header)?.[1];
    if (token === undefined || !state.endpoint.isValid(token)) {
      return json(401, { error: "invalid_token" }, {
        "www-authenticate": 'Bearer error="invalid_token"',
      });
    }
    if (request.method !== "GET") {
      return json(405, { error: "method_not_allowed" });
    }
    return route(name);
  };
  const api = { decorate: withHeaders, closing: state.closing, api: true };
  return await faultyAnswer(state.apiFaults.shift(), answer, api);
}

/** What the service's handlers share: its parts, from its checked options. */
function serviceState(options: FakePartnerServiceOptions) {
  requireKnownOptions(options, SERVICE_OPTIONS, CONTEXT);
  const now = checkedReadings(options.now, CONTEXT) ?? Date.now;
  const credentials = credentialsOf(options.credentials);
  const quota = part(options.quota, "quota", ["perHour", "perDay"]);
  const endpoint = fakeTokenEndpoint({
    // A time option like any: its bound is also below a year, the most expires_in says.
    lifetime: checked(options.tokenLifetime, 86_400_000, "tokenLifetime", MS),
    quota: quotaCounter(
      checked(quota.perHour, 1000, "quota.perHour"),
      checked(quota.perDay, 10_000, "quota.perDay"),
      now,
    ),
    now,
    ...credentials,
    audience: AUDIENCE,
    retryAfter: oneOf(options.retryAfter, [false, true], CONTEXT, "retryAfter"),
    bodyFormats: bodyFormats(options.tokenBodyFormats ?? ["json", "form"]),
  });
  const seed = checked(options.seed, 1, "seed", "safe integer");
  const cut = oneOf(options.beyondMaxLimit, BEYOND, CONTEXT, "beyondMaxLimit");
  return {
    now,
    credentials,
    endpoint,
    lists: generateLists(sizesOf(options.items), seed, now()),
    latency: checked(options.latency, 0, "latency", `non-negative ${WHOLE}`),
    listEnvelope: oneOf(
      options.listEnvelope,
      ["object", "array"],
      CONTEXT,
      "listEnvelope",
    ),
    churn: churner(options.churn, seed, now),
    maxLimit: checked(options.maxLimit, 1000, "maxLimit", "positive integer"),
    cutAtMax: cut === "cut",
    rateLimited: rateGate(options.apiRateLimit, now, CONTEXT),
    tokenFaults: checkedFaults(options.faults ?? [], CONTEXT),
    apiFaults: [] as FakeFault[],
    closing: new AbortController(),
    decorate: endpoint.withQuota,
    counts: { tokenRequests: 0, apiRequests: 0 },
  };
}

/** The `tokenBodyFormats` option: an array of "json" and "form", each checked as `oneOf` checks one. */
function bodyFormats(formats: readonly ("json" | "form")[]) {
  // An empty one took no token request, each refused "Content-Type must be ".
  if (!Array.isArray(formats) || formats.length === 0) {
    const rule = "must be an array of one or both of json and form";
    throw typeError(CONTEXT, "tokenBodyFormats", rule);
  }
  // `?? null`: oneOf takes undefined for its default, and a hole is no format.
  for (const format of formats) {
    oneOf(format ?? null, ["json", "form"], CONTEXT, "tokenBodyFormats");
  }
  return formats;
}

/** The credentials given, each checked, or made up. */
function credentialsOf(options: Partial<FakeCredentials> | undefined) {
  const given = part(options, "credentials", ["clientId", "clientSecret"]);
  const either = (field: keyof FakeCredentials, made: string) =>
    given[field] === undefined
      ? made
      : requireText(given[field], CONTEXT, `credentials.${field}`);
  return Object.freeze({
    clientId: either("clientId", `fake-client-${randomText(9)}`),
    clientSecret: either("clientSecret", `fake-secret-${randomText(24)}`),
  }) as FakeCredentials;
}

/** Each list's size, checked and bounded. */
function sizesOf(given: Partial<ListSizes> | undefined): ListSizes {
  const items = part(given, "items", [
    "organizations",
    "transactions",
    "cardholders",
  ]);
  // Each item is made at once: 10 million is about 3 GB; 1e9 ran out of memory with no error.
  const size = (list: keyof ListSizes, fallback: number) => {
    const count = checked(items[list], fallback, `items.${list}`);
    return checkAtMost(count, MOST_ITEMS, CONTEXT, `items.${list}`);
  };
  return {
    organizations: size("organizations", 25),
    transactions: size("transactions", 500),
    cardholders: size("cardholders", 120),
  };
}

/** Items a fake list holds at most. */
const MOST_ITEMS = 10_000_000;

/** An options object's part (`quota`, `items`, `credentials`), checked when given: a number was taken as none. */
function part<T extends object>(
  value: T | undefined,
  name: string,
  names: readonly (keyof T & string)[],
): Partial<T> {
  if (value !== undefined) requireKnownOptions(value, names, CONTEXT, name);
  return value ?? {};
}

/** A numeric option, checked by `rule`: a count unless it says otherwise. */
function checked(
  value: number | undefined,
  fallback: number,
  field: string,
  rule: NumberRule = "non-negative integer",
) {
  return checkNumber(value, fallback, rule, CONTEXT, field);
}
