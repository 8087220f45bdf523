// Internal: the names of the fake service's options, for the checks of the service and of the API serving it.

import { optionNames } from "../core/_check.ts";
import type { FakePartnerServiceOptions } from "./fake_options.ts";

/** Each of {@linkcode FakePartnerServiceOptions}, as the compiler holds them. */
export const SERVICE_OPTIONS: readonly string[] = optionNames<
  FakePartnerServiceOptions
>()(
  "tokenLifetime quota now retryAfter faults items seed latency apiRateLimit listEnvelope credentials tokenBodyFormats churn maxLimit beyondMaxLimit",
);
