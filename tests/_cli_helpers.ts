// Shared by the CLI tests: the fake's configuration as PARTNER_API_* variables.

import { CONFIG_VARIABLES } from "../src/cli/mod.ts";
import type { FakePartnerApi } from "../src/testing/mod.ts";

/** The environment variables that point the tool at `api`. */
export function configFor(api: FakePartnerApi): Record<string, string> {
  const { environment, credentials } = api;
  return {
    [CONFIG_VARIABLES.baseUrl]: environment.baseUrl.href,
    [CONFIG_VARIABLES.pciBaseUrl]: environment.pciBaseUrl.href,
    [CONFIG_VARIABLES.tokenUrl]: environment.tokenUrl.href,
    [CONFIG_VARIABLES.audience]: environment.audience,
    [CONFIG_VARIABLES.clientId]: credentials.clientId,
    [CONFIG_VARIABLES.clientSecret]: credentials.clientSecret,
  };
}
