// Issue 18: configFromEnv, the library's first hour. Against the fake.

import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import {
  CONFIG_OPTIONAL_VARIABLES,
  CONFIG_VARIABLES,
  type ConfigError,
  configFromEnv,
  type EnvSource,
} from "../src/core/config.ts";
import { createClient } from "../src/client/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { configFor } from "./_cli_helpers.ts";
import { NAMED_SETTINGS } from "../src/core/_check.ts";

Deno.test("configFromEnv() gives what createClient needs", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient(configFromEnv(configFor(api)));
  const response = await client.fetch("organizations");
  await response.body?.cancel();
  equal(response.status, 200);
  const fromFunction = configFromEnv((name) => configFor(api)[name]);
  equal(fromFunction.clientId, api.credentials.clientId);
  const { clientId } = api.credentials;
  const padded = { ...configFor(api), PARTNER_API_CLIENT_ID: ` ${clientId} ` };
  equal(configFromEnv(padded).clientId, clientId, "values are trimmed");
});

Deno.test("configFromEnv() names every missing variable at once, with near misses", () => {
  throws(
    () => configFromEnv({ PARTNER_API_BASEURL: "https://x.example/api/" }),
    (error: unknown) => {
      ok(error instanceof TypeError);
      const { missing, option, rule } = error as TypeError & {
        missing: string[];
        option: string;
        rule: string;
      };
      deepStrictEqual(missing, Object.values(CONFIG_VARIABLES));
      equal(option, "PARTNER_API_BASE_URL");
      equal(rule, "is not set");
      ok(error.message.includes("PARTNER_API_BASEURL is set"), error.message);
      // Offered once, as the variable nearest it (r176a F3: as 3 variables).
      equal(error.message.split("did you mean").length, 2, error.message);
      ok(error.message.includes("mean PARTNER_API_BASE_URL?"), error.message);
      return true;
    },
  );
  // r177: one set name nearly as near two variables offers both (PCI_URL lost PCI_BASE_URL when offered once).
  throws(
    () => configFromEnv({ PARTNER_API_PCI_URL: "https://x.example/api/" }),
    (error: Error) =>
      error.message.includes("PARTNER_API_PCI_BASE_URL?") ||
      error.message.includes("PARTNER_API_PCI_BASE_URL or"),
  );
});

Deno.test("configFromEnv() over a source that cannot list its names reads a few hundred names to find a typo, and about as many with nothing set (with replaced characters it read 5,109 when nothing was set)", () => {
  const count = (set: Record<string, string>) => {
    let reads = 0;
    const read = (name: string) => (reads++, set[name]);
    throws(() => configFromEnv(read), TypeError);
    return reads;
  };
  ok(count({}) < 600, `${count({})} reads with nothing set`);
  const typo = configFor({
    environment: {
      baseUrl: new URL("https://partner.example/api/"),
      pciBaseUrl: new URL("https://pci.example/api/"),
      tokenUrl: new URL("https://idp.example/token"),
      audience: "partner-api",
    },
    credentials: { clientId: "id", clientSecret: "secret" },
  } as never);
  typo.PARTNER_API_BASE_URI = typo.PARTNER_API_BASE_URL!;
  delete typo.PARTNER_API_BASE_URL;
  ok(count(typo) < 600, `${count(typo)} reads for one typo`);
  throws(() => configFromEnv((name) => typo[name]), {
    message: /PARTNER_API_BASE_URI is set: did you mean PARTNER_API_BASE_URL\?/,
  });
  // The usual mistake leaves four missing (the bases, the token URL and the audience): still named.
  const usual: Record<string, string> = {
    PARTNER_API_CLIENT_ID: "id",
    PARTNER_API_CLIENT_SECRET: "secret",
    PARTNER_API_BASE_URI: "https://partner.example/api/",
  };
  throws(() => configFromEnv((name) => usual[name]), {
    message: /PARTNER_API_BASE_URI is set: did you mean PARTNER_API_BASE_URL\?/,
  });
});

/** The six variables configFromEnv needs, each set. */
const SIX: Readonly<Record<string, string>> = {
  PARTNER_API_BASE_URL: "https://api.example/api/",
  PARTNER_API_PCI_BASE_URL: "https://pci.example/api/",
  PARTNER_API_TOKEN_URL: "https://idp.example/token",
  PARTNER_API_AUDIENCE: "https://api.example",
  PARTNER_API_CLIENT_ID: "client-0123",
  PARTNER_API_CLIENT_SECRET: "secret-0123",
};

Deno.test("configFromEnv() offers no variable it reads as a near miss of another, missing or empty", () => {
  const full: Record<string, string> = {
    ...SIX,
    [CONFIG_OPTIONAL_VARIABLES.bodyFormat]: "json",
    [CONFIG_OPTIONAL_VARIABLES.clientAuthentication]: "body",
  };
  const names = Object.keys(full);
  for (const variable of Object.values(CONFIG_VARIABLES)) {
    for (const unset of [undefined, ""]) {
      const env = { ...full, [variable]: unset };
      throws(() => configFromEnv(env), (error: unknown) => {
        ok(error instanceof TypeError);
        const { missing, option } = error as ConfigError;
        deepStrictEqual([option, ...missing], [variable, variable]);
        // The hint has no field: the message must name no other variable read.
        const others = names.filter((name) => name !== variable);
        deepStrictEqual(
          others.filter((name) => error.message.includes(name)),
          [],
        );
        return true;
      });
    }
  }
});

Deno.test("configFromEnv() refuses a value that is no text, naming its variable and never the value, from a record or a function (attack r183b F1: a URL or a number failed 'read(...)?.trim is not a function', naming nothing)", () => {
  const full: Record<string, unknown> = SIX;
  const variables = [
    ...Object.values(CONFIG_VARIABLES),
    ...Object.values(CONFIG_OPTIONAL_VARIABLES),
  ];
  for (const variable of variables) {
    for (const value of [new URL("https://idp.example/t"), 987654321]) {
      const env = { ...full, [variable]: value };
      for (const source of [env, (name: string) => env[name]]) {
        throws(() => configFromEnv(source as EnvSource), (error: unknown) => {
          ok(error instanceof TypeError);
          equal((error as ConfigError).option, variable);
          equal((error as ConfigError).rule, "must be a string");
          ok(!error.message.includes(String(value)), error.message);
          return true;
        });
      }
    }
  }
});

Deno.test("configFromEnv() names the variable and the rule, never the value", async () => {
  await using api = await startFakePartnerApi();
  const pasted = "pasted-Secret-9f8e7d6c5b4a";
  throws(
    () =>
      configFromEnv({
        ...configFor(api),
        PARTNER_API_TOKEN_URL: `http://idp.example.com/${pasted}`,
      }),
    (error: unknown) => {
      ok(error instanceof TypeError);
      equal(
        (error as TypeError & { option: string }).option,
        "PARTNER_API_TOKEN_URL",
      );
      ok(!error.message.includes(pasted), error.message);
      ok(!JSON.stringify(error).includes(pasted));
      return true;
    },
  );
});

Deno.test("configFromEnv() on Deno never reads globalThis.process (loading it costs an edge cold start about 40 ms)", () => {
  const original = Object.getOwnPropertyDescriptor(globalThis, "process")!;
  let reads = 0;
  Object.defineProperty(globalThis, "process", {
    configurable: true,
    get: () => (reads++, original.get?.call(globalThis) ?? original.value),
  });
  try {
    throws(() => configFromEnv(), TypeError); // the tests run without the variables
  } finally {
    Object.defineProperty(globalThis, "process", original);
  }
  equal(reads, 0);
});

Deno.test("settingNames takes each name configFromEnv writes, no more (a client and its provider read one object)", () => {
  const config = configFromEnv({
    ...Object.fromEntries(
      Object.values(CONFIG_VARIABLES).map((name) => [name, "https://x/api/"]),
    ),
  });
  const written = Object.keys(config.settingNames ?? {});
  deepStrictEqual(new Set(NAMED_SETTINGS), new Set(written));
});
