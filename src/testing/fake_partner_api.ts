// The fake partner service: a Deno.serve server on 127.0.0.1.

import { defineEnvironment, type Environment } from "../environment.ts";
import { formatQuotaHeader, QUOTA_HEADER } from "../quota.ts";
import { delay } from "../_retry.ts";
import { QuotaCounter } from "./_quota_counter.ts";

/**
 * A scripted misbehaviour of the token endpoint, applied to one token
 * request in the order given.
 *
 * - `status`: answers with that status and an OAuth error body, optionally
 *   with `Retry-After`.
 * - `delay`: waits `ms` milliseconds, then answers normally.
 * - `drop`: starts a 200 answer and cuts the connection mid-body.
 * - `body`: answers 200 (or `status`) with exactly this body, e.g. broken JSON.
 *
 * `headers` are set last, over the quota header if they name it.
 */
export type TokenFault =
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

/** Options of {@linkcode startFakePartnerApi}. */
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
  faults?: readonly TokenFault[];
}

/** Credentials the fake accepts: a frozen object. */
export interface FakeCredentials {
  /** The client id. */
  readonly clientId: string;
  /** The client secret. */
  readonly clientSecret: string;
}

/** A running fake of the partner service. */
export interface FakePartnerApi extends AsyncDisposable {
  /** Its environment, on `http://127.0.0.1:<port>/`. */
  readonly environment: Environment;
  /** The credentials it accepts. */
  readonly credentials: FakeCredentials;
  /** Requests to the token endpoint so far, answered or rejected. */
  readonly tokenRequests: number;
  /** Tokens issued so far. */
  readonly tokensIssued: number;
  /** Queues faults for the next token requests, after those already queued. */
  injectTokenFaults(...faults: TokenFault[]): void;
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

function positiveInteger(
  value: number | undefined,
  fallback: number,
  field: string,
): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Cannot start fake partner API: '${field}' must be a non-negative integer: received ${value}`,
    );
  }
  return value;
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

async function readTokenBody(
  request: Request,
): Promise<Record<string, unknown> | string> {
  if (request.method !== "POST") return "the token endpoint takes POST";
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    return "Content-Type must be application/json";
  }
  let body: unknown;
  try {
    body = await request.json();
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
  const lifetime = positiveInteger(
    options.tokenLifetime,
    86_400,
    "tokenLifetime",
  );
  if (lifetime === 0) {
    throw new RangeError(
      "Cannot start fake partner API: 'tokenLifetime' must be a positive integer: received 0",
    );
  }
  const now = options.now ?? Date.now;
  const quota = new QuotaCounter(
    positiveInteger(options.quota?.perHour, 1000, "quota.perHour"),
    positiveInteger(options.quota?.perDay, 10_000, "quota.perDay"),
    now,
  );
  const credentials: FakeCredentials = Object.freeze({
    clientId: `fake-client-${randomText(9)}`,
    clientSecret: `fake-secret-${randomText(24)}`,
  });
  const audience = "https://partner-api.fake";
  const faults: TokenFault[] = [...(options.faults ?? [])];
  const tokens = new Map<string, number>();
  const closing = new AbortController();
  let tokenRequests = 0;
  let tokensIssued = 0;

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
    const body = await readTokenBody(request);
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
    fault: TokenFault,
    request: Request,
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
        // Only close() cuts a delay short: a client giving up must not change
        // what the fake does, as it would not change a real server.
        await delay(fault.ms, closing.signal).catch(() => {});
        return await answerToken(request);
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

  function handle(request: Request): Promise<Response> | Response {
    const { pathname } = new URL(request.url);
    if (pathname === "/oauth/token") {
      tokenRequests++;
      const fault = faults.shift();
      return fault ? faultyAnswer(fault, request) : answerToken(request);
    }
    return json(404, { error: "not_found" });
  }

  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    onError: () => json(500, { error: "server_error" }),
  }, handle);
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const environment = defineEnvironment({
    baseUrl: `${origin}/api/`,
    pciBaseUrl: `${origin}/pci/api/`,
    tokenUrl: `${origin}/oauth/token`,
    audience,
  });

  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      closing.abort();
      await server.shutdown();
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
    injectTokenFaults(...more: TokenFault[]) {
      faults.push(...more);
    },
    revokeTokens() {
      tokens.clear();
    },
    isValidToken(accessToken: string) {
      const expiresAt = tokens.get(accessToken);
      return expiresAt !== undefined && now() < expiresAt;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
