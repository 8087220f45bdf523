// The fake's token endpoint: validates like the real one, issues expiring tokens, counts a UTC quota.

import {
  formatQuotaHeader,
  QUOTA_HEADER,
  type QuotaBucket,
  quotaResetAfter,
} from "../core/quota.ts";
import { fieldsOf } from "../core/_check.ts";
import {
  type Decorate,
  json,
  oauthError,
  randomText,
  withHeaders,
} from "./_fake_http.ts";
import type { FakeCredentials } from "./fake_options.ts";

interface TokenEndpointSetup extends FakeCredentials {
  readonly lifetime: number;
  readonly quota: ReturnType<typeof quotaCounter>;
  readonly now: () => number;
  readonly audience: string;
  readonly retryAfter: boolean;
  readonly bodyFormats: readonly ("json" | "form")[];
}

const TOKEN_FIELDS = ["audience", "client_id", "client_secret", "grant_type"];
const MEDIA_TYPES = {
  json: "application/json",
  form: "application/x-www-form-urlencoded",
};

/** The token endpoint and the tokens it issued, in a closure: nothing shows the credentials it holds. */
export function fakeTokenEndpoint(setup: TokenEndpointSetup) {
  const { clientId, clientSecret, audience, quota, lifetime, now } = setup;
  const tokens = new Map<string, number>(); // token → epoch ms of its expiry
  let issued = 0;
  /** Sets the quota header as it stands now, then `headers`, on `response`. */
  const withQuota: Decorate = (response, headers) => {
    response.headers.set(QUOTA_HEADER, formatQuotaHeader(quota.buckets()));
    return withHeaders(response, headers);
  };
  return {
    async answer(request: Request): Promise<Response> {
      const body = await readTokenBody(request, setup.bodyFormats);
      if (typeof body === "string") {
        const status = request.method === "POST" ? 400 : 405;
        return withQuota(oauthError(status, "invalid_request", body));
      }
      if (
        body.client_id !== clientId || body.client_secret !== clientSecret ||
        body.audience !== audience
      ) {
        return withQuota(oauthError(401, "access_denied", "Unauthorized"));
      }
      if (!quota.available()) {
        const wait = String(quotaResetAfter(quota.buckets()));
        return withQuota(
          oauthError(429, "too_many_requests", "Client quota exceeded"),
          setup.retryAfter ? { "retry-after": wait } : {},
        );
      }
      quota.spend();
      issued++;
      const accessToken = randomText(32);
      // Never refused before the whole seconds it advertises (under 1 s of lifetime: 1).
      const expiresIn = Math.max(1, Math.floor(lifetime / 1000));
      tokens.set(accessToken, now() + Math.max(lifetime, expiresIn * 1000));
      return withQuota(json(200, {
        access_token: accessToken,
        expires_in: expiresIn,
        token_type: "Bearer",
      }));
    },
    withQuota,
    get tokensIssued() {
      return issued;
    },
    /** Whether `accessToken` was issued here and has not expired or been revoked. */
    isValid(accessToken: string): boolean {
      const expiresAt = tokens.get(accessToken);
      return expiresAt !== undefined && now() < expiresAt;
    },
    revoke: () => tokens.clear(),
  };
}

async function readTokenBody(
  request: Request,
  formats: readonly ("json" | "form")[],
): Promise<Record<string, unknown> | string> {
  if (request.method !== "POST") return "the token endpoint takes POST";
  const type = request.headers.get("content-type")?.split(";")[0]?.trim()
    .toLowerCase();
  const format = formats.find((name) => MEDIA_TYPES[name] === type);
  const types = formats.map((name) => MEDIA_TYPES[name]).join(" or ");
  if (format === undefined) return `Content-Type must be ${types}`;
  let body: unknown;
  try {
    body = format === "json"
      ? await request.json()
      : Object.fromEntries(new URLSearchParams(await request.text()));
  } catch {
    return "the body is not JSON";
  }
  const fields = Array.isArray(body) ? undefined : fieldsOf(body);
  if (fields === undefined) return "the body must be a JSON object";
  if (Object.keys(fields).sort().join() !== TOKEN_FIELDS.join()) {
    return `the body must have exactly ${TOKEN_FIELDS.join(", ")}`;
  }
  return fields.grant_type === "client_credentials"
    ? fields
    : "grant_type must be client_credentials";
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Token quota that resets on the UTC hour and the UTC day, like the real service. */
export function quotaCounter(
  perHour: number,
  perDay: number,
  now: () => number,
) {
  const windows = [
    { name: "per_hour", length: HOUR, limit: perHour, start: -1, used: 0 },
    { name: "per_day", length: DAY, limit: perDay, start: -1, used: 0 },
  ];
  const current = () => {
    const at = now();
    for (const window of windows) {
      const start = Math.floor(at / window.length) * window.length;
      if (start !== window.start) {
        window.start = start;
        window.used = 0;
      }
    }
    return windows;
  };
  return {
    available: () => current().every((window) => window.used < window.limit),
    spend: () => current().forEach((window) => window.used++),
    /** The buckets as they stand now. */
    buckets(): QuotaBucket[] {
      const at = now();
      return current().map((window) => ({
        bucket: window.name,
        limit: window.limit,
        remaining: Math.max(0, window.limit - window.used),
        resetAfter: Math.ceil((window.start + window.length - at) / 1000),
      }));
    },
  };
}
