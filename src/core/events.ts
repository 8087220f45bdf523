// The events of `onEvent`, one family per file. Public through the root entry.

import type {
  QuotaBlockedEvent,
  TokenRefreshEvent,
  TokenRequestEvent,
  TokenRetryEvent,
} from "./token_events.ts";
import type {
  ApiListEvent,
  ApiRenewalEvent,
  ApiRequestEvent,
  ApiRetryEvent,
} from "./api_events.ts";
import type {
  RateDegradedEvent,
  RateRestoredEvent,
  RateWaitEvent,
} from "./rate_events.ts";

export type * from "./token_events.ts";
export type * from "./api_events.ts";
export type * from "./rate_events.ts";

/**
 * Every event `onEvent` receives; `type` tells them apart. Events are frozen and never hold a secret or a token; with
 * no listener none is built, and what a listener throws is ignored. See docs/events.md.
 *
 * @example Telling events apart
 * ```ts
 * import { createClient, type PartnerApiEvent } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const line = (event: PartnerApiEvent): string =>
 *   event.type === "api.request" ? `${event.method} ${event.path} ${event.status}`
 *   : event.type === "token.request" ? `token ${event.outcome}` : event.type;
 * const lines: string[] = [];
 * await using api = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials,
 *   onEvent: (event) => lines.push(line(event)) });
 * await (await client.fetch("organizations")).body?.cancel();
 * deepStrictEqual(lines, ["token ok", "GET /api/organizations 200"]);
 * ```
 */
export type PartnerApiEvent =
  | TokenRequestEvent
  | TokenRetryEvent
  | TokenRefreshEvent
  | QuotaBlockedEvent
  | ApiRequestEvent
  | ApiRetryEvent
  | ApiRenewalEvent
  | RateWaitEvent
  | ApiListEvent
  | RateDegradedEvent
  | RateRestoredEvent;

/**
 * A listener of events.
 *
 * @example Listing what a provider did
 * ```ts
 * import { createTokenProvider, type EventListener } from "@partner-api/client";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const seen: string[] = [];
 * const onEvent: EventListener = (event) => seen.push(event.type);
 * await using api = await startFakePartnerApi();
 * await createTokenProvider({ ...api.environment, ...api.credentials, onEvent }).getToken();
 * deepStrictEqual(seen, ["token.request"]);
 * ```
 */
export type EventListener = (event: PartnerApiEvent) => void;
