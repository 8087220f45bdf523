// The setup the token provider's tests share: a fake and a provider on one
// manual clock.

import {
  createTokenProvider,
  type TokenProviderOptions,
} from "../src/token/mod.ts";
import {
  type FakePartnerApiOptions,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { backgroundWork, manualClock } from "./_helpers.ts";

/** Retries that take milliseconds, not seconds. */
export const FAST_RETRY = { initialDelay: 1, maxDelay: 50 };

/** A fake and a provider that share one manual clock. */
export async function setup(
  fake: FakePartnerApiOptions = {},
  provider: Partial<TokenProviderOptions> = {},
) {
  const clock = manualClock();
  const api = await startFakePartnerApi({ now: clock, ...fake });
  // Background refreshes are awaited through waitUntil, never slept for.
  const background = backgroundWork();
  return {
    api,
    clock,
    background,
    provider: createTokenProvider({
      ...api.environment,
      ...api.credentials,
      now: clock,
      retry: FAST_RETRY,
      waitUntil: background.waitUntil,
      ...provider,
    }),
  };
}
