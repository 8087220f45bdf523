// The 401 ledger (not an entry): pure decisions over the token record a fleet shares, and the small ledger a client
// keeps for a hand-written provider.

import type { TokenRecord, TokenRenewal } from "../store/types.ts";
import { steadyClock } from "../core/_clock.ts";
import { FLEET_CLOCK_SLACK } from "../store/token_access.ts";

/** A 401 from the API costs at most one fresh token per this window. */
export const RENEWAL_WINDOW = 3_600_000;

/**
 * After a 401: `"renew"` (retry once with a fresh token) for the first in {@linkcode RENEWAL_WINDOW}, else `"keep"`
 * (return the answer): the service never revokes tokens early, so a repeated 401 is not the token's fault.
 */
export function onUnauthorized(lastRenewal: number | undefined, now: number) {
  return now - (lastRenewal ?? -Infinity) >= RENEWAL_WINDOW ? "renew" : "keep";
}

/** A token as the ledger compares it: by its value and its age. */
export interface LedgerToken {
  readonly accessToken: string;
  /** Epoch ms; later means issued later. `undefined` when unknown. */
  readonly expiresAt: number | undefined;
}

/**
 * A token's FNV-1a 64-bit hex fingerprint, for the ledger to recognise the token it renewed: it tells nothing of the
 * token, and stores seal it anyway.
 */
export function tokenFingerprint(accessToken: string): string {
  let low = 0x84222325;
  let high = 0xcbf29ce4;
  for (let i = 0; i < accessToken.length; i++) {
    low = (low ^ accessToken.charCodeAt(i)) >>> 0;
    // Multiply by the FNV prime 0x100000001b3 in two 32-bit halves.
    const lowProduct = low * 0x1b3;
    high = (Math.imul(high, 0x1b3) + Math.imul(low, 0x100) +
      Math.floor(lowProduct / 0x100000000)) >>> 0;
    low = lowProduct >>> 0;
  }
  return high.toString(16).padStart(8, "0") + low.toString(16).padStart(8, "0");
}

/**
 * The fleet-wide 401 ledger, over the record where the token lives: `"retry"` with the current token (free) when
 * another than the refused one is there, or the fleet renewed this one or one issued clearly later; `"renew"` (drop it,
 * retry with a fresh one) once per {@linkcode RENEWAL_WINDOW} fleet-wide; else `"keep"` (return the 401, keep it).
 */
export function unauthorizedVerdict(
  { renewal, current, stored }: {
    /** The fleet's last renewal (the store's record, or this provider's own). */
    readonly renewal?: TokenRenewal | undefined;
    /** The freshest token known (stored or cached), if any. */
    readonly current?: LedgerToken | undefined;
    /** The token the record holds (the store's, or this provider's own), if any. */
    readonly stored?: LedgerToken | undefined;
  },
  refused: LedgerToken,
  now: number,
): "retry" | "renew" | "keep" {
  if (
    current !== undefined && current.accessToken !== refused.accessToken &&
    (current.expiresAt ?? Infinity) >= (refused.expiresAt ?? -Infinity)
  ) return "retry";
  if (renewal === undefined) return "renew";
  // The fleet renewed this very token, or one issued clearly later (beyond the fleet's clock slack: a member's clock
  // ahead made every 401 a token): one is on its way.
  const older = (refused.expiresAt ?? -Infinity) + FLEET_CLOCK_SLACK <
    renewal.expiresAt;
  const renewed = renewal.token === tokenFingerprint(refused.accessToken);
  // Unless the record holds this token again: its renewal brought it back (an endpoint that caches its tokens), and
  // the hour's renewal is spent (else every 401 cost a token request).
  const again = stored?.accessToken === refused.accessToken;
  if ((renewed && !again) || older) return "retry";
  return onUnauthorized(renewal.at, now);
}

/** The record after the fleet renews `refused`: that token dropped, the renewal noted. */
export function renewedRecord(
  record: TokenRecord | undefined,
  refused: LedgerToken,
  now: number,
): TokenRecord {
  const { token, ...rest } = record ?? {};
  const kept = token !== undefined && token.accessToken !== refused.accessToken;
  return {
    ...rest,
    ...(kept ? { token } : {}),
    renewal: {
      at: now,
      expiresAt: refused.expiresAt ?? now,
      token: tokenFingerprint(refused.accessToken),
    },
  };
}

/** {@linkcode onUnauthorized} over any provider (`true`: renewed): a client's ledger without `reportUnauthorized`. */
export function renewalLedger(
  now: () => number,
  invalidate: (accessToken: string) => void | Promise<void>,
): (accessToken: string) => Promise<boolean> {
  // The hour is this process's own span: on the steady clock (a step back must not stretch it).
  const steady = steadyClock(now);
  let renewedAt: number | undefined;
  return async (accessToken) => {
    const at = steady();
    if (onUnauthorized(renewedAt, at) === "keep") return false;
    renewedAt = at;
    await invalidate(accessToken);
    return true;
  };
}

/** The freshest usable token: the stored one when it is newer than the cached one and not refused. */
export function freshestToken(
  stored: LedgerToken | undefined,
  cached: LedgerToken | undefined,
  refused: LedgerToken | undefined,
): LedgerToken | undefined {
  if (
    stored !== undefined && stored.accessToken !== refused?.accessToken &&
    (stored.expiresAt ?? -Infinity) > (cached?.expiresAt ?? -Infinity)
  ) return stored;
  return cached;
}

/** A refused token as the ledger compares it: its age, when one of `known` is it. */
export function ledgerToken(
  accessToken: string,
  ...known: (LedgerToken | undefined)[]
): LedgerToken {
  const same = known.find((token) => token?.accessToken === accessToken);
  return { accessToken, expiresAt: same?.expiresAt };
}
