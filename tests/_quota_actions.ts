// The random steps of the quota property test (quota_property_test.ts):
// clock leaps, token-endpoint faults, callers, revocations, new processes
// and outages.

import fc from "fast-check";
import type { FakeFault } from "../src/testing/mod.ts";

export type Action =
  | { readonly kind: "advance"; readonly ms: number }
  | { readonly kind: "token fault"; readonly fault: FakeFault }
  | {
    readonly kind: "calls";
    readonly count: number;
    readonly unauthorized: boolean;
    /** Callers that hang up as soon as they have asked. */
    readonly hangUps: number;
  }
  | { readonly kind: "revoke" }
  /** A new provider and client over the same store: a new process or isolate. */
  | { readonly kind: "new process" }
  /** The token endpoint answers `fault` for `minutes`, called every 5 minutes. */
  | {
    readonly kind: "outage";
    readonly fault: FakeFault;
    readonly minutes: number;
  };

const retryAfters = fc.constantFrom(
  undefined,
  "1.5",
  "-5",
  "+60",
  "0",
  "30",
  "7200",
  "soon",
  "Tue, 01 Jan 2019 00:00:00 GMT",
  "Fri, 31 Dec 2999 23:59:59 GMT",
);

const tokenFault: fc.Arbitrary<FakeFault> = fc.oneof(
  fc.tuple(retryAfters, fc.integer({ min: 0, max: 4000 })).map((
    [retryAfter, reset],
  ) => ({
    kind: "status" as const,
    status: 429,
    headers: {
      "idp-client-quota-limit": `b=per_hour;q=10;r=0;t=${reset}`,
      ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }),
    },
  })),
  fc.constant<FakeFault>({
    kind: "body",
    body: '{"access_token":"a b","expires_in":60,"token_type":"Bearer"}',
  }),
  fc.constant<FakeFault>({
    kind: "body",
    body: '{"access_token":"abc","expires_in":0,"token_type":"Bearer"}',
  }),
  fc.constant<FakeFault>({ kind: "status", status: 500 }),
  fc.constant<FakeFault>({ kind: "status", status: 401 }),
  fc.constant<FakeFault>({ kind: "drop" }),
  fc.constantFrom(3600, 7200, 20).map((retryAfter): FakeFault => ({
    kind: "status",
    status: 503,
    retryAfter,
  })),
  fc.constant<FakeFault>({ kind: "status", status: 403, retryAfter: 3600 }),
);

export const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.integer({ min: 0, max: 40 * 60_000 }).map((ms) => ({
      kind: "advance" as const,
      ms,
    })),
  },
  {
    weight: 2,
    arbitrary: tokenFault.map((fault) => ({
      kind: "token fault" as const,
      fault,
    })),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("calls" as const),
      count: fc.integer({ min: 1, max: 5 }),
      unauthorized: fc.boolean(),
      hangUps: fc.integer({ min: 0, max: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "revoke" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "new process" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("outage" as const),
      fault: tokenFault,
      minutes: fc.integer({ min: 5, max: 240 }),
    }),
  },
);
