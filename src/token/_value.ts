// Internal: the token as handed out, and the quota as last seen. Both are
// frozen plain objects; the token hides its secret part from inspection and
// from JSON.

import type { QuotaBucket } from "../core/quota.ts";
import type { IssuedToken, QuotaSnapshot } from "../core/token_values.ts";

const REDACTED = "[redacted]";
const INSPECT_DENO = Symbol.for("Deno.customInspect");
const INSPECT_NODE = Symbol.for("nodejs.util.inspect.custom");

type Inspect = (value: unknown, options?: unknown) => string;

function redactedView(token: IssuedToken): Record<string, unknown> {
  const { tokenType, expiresIn, expiresAt, quota } = token;
  return { accessToken: REDACTED, tokenType, expiresIn, expiresAt, quota };
}

/**
 * A frozen copy of `fields` that never shows its access token: the token is
 * a non-enumerable property, so a spread, `Object.entries` and
 * `structuredClone` leave it out; `JSON.stringify` and inspection show it as
 * `[redacted]`; `token.accessToken` still reads it.
 */
export function issuedToken(fields: IssuedToken): IssuedToken {
  // One built here already is frozen and hidden as it should be: reuse it.
  if (built.has(fields)) return fields;
  const token = {
    tokenType: "Bearer" as const,
    expiresIn: fields.expiresIn,
    expiresAt: fields.expiresAt,
    quota: freezeBuckets(fields.quota),
  } as IssuedToken;
  Object.defineProperties(token, {
    accessToken: { value: fields.accessToken },
    toJSON: { value: () => redactedView(token) },
    [INSPECT_DENO]: {
      value: (inspect: Inspect, options: unknown) =>
        `IssuedToken ${inspect(redactedView(token), options)}`,
    },
    [INSPECT_NODE]: {
      value: (_depth: number, options: unknown, inspect: Inspect) =>
        `IssuedToken ${inspect(redactedView(token), options)}`,
    },
  });
  built.add(token);
  return Object.freeze(token);
}

/** The tokens {@linkcode issuedToken} made, so that none is built twice. */
const built = new WeakSet<IssuedToken>();

/**
 * A plain copy of `token` for a store: its data properties only, so that a
 * store may serialize it with `JSON.stringify` (which shows a handed-out
 * token as `[redacted]`).
 */
export function storableToken(token: IssuedToken): IssuedToken {
  return {
    accessToken: token.accessToken,
    tokenType: token.tokenType,
    expiresIn: token.expiresIn,
    expiresAt: token.expiresAt,
    quota: token.quota.map((bucket) => ({ ...bucket })),
  };
}

/** A frozen snapshot of `buckets`, stamped `observedAt`. */
export function quotaSnapshot(
  buckets: readonly QuotaBucket[],
  observedAt: number,
): QuotaSnapshot {
  return Object.freeze({ buckets: freezeBuckets(buckets), observedAt });
}

function freezeBuckets(
  buckets: readonly QuotaBucket[],
): readonly QuotaBucket[] {
  return Object.freeze(buckets.map((bucket) => Object.freeze({ ...bucket })));
}
