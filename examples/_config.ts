// Shared by the examples: the PARTNER_API_* variables, read once.

import { defineEnvironment, type Environment } from "@partner-api/client";

/** An environment and credentials, as the examples need them. */
export interface ExampleConfig {
  environment: Environment;
  clientId: string;
  clientSecret: string;
}

/** Reads the PARTNER_API_* variables (see .env.example); exits 2 when one is missing. */
export function configFromEnv(): ExampleConfig {
  const read = (name: string): string => {
    const value = Deno.env.get(`PARTNER_API_${name}`);
    if (!value) {
      console.error(`PARTNER_API_${name} is not set (see .env.example)`);
      Deno.exit(2);
    }
    return value;
  };
  return {
    environment: defineEnvironment({
      baseUrl: read("BASE_URL"),
      pciBaseUrl: read("PCI_BASE_URL"),
      tokenUrl: read("TOKEN_URL"),
      audience: read("AUDIENCE"),
    }),
    clientId: read("CLIENT_ID"),
    clientSecret: read("CLIENT_SECRET"),
  };
}
