import { deepStrictEqual, equal, throws } from "node:assert/strict";
import fc from "fast-check";
import {
  defineEnvironment,
  type EnvironmentInit,
} from "../src/core/environment.ts";
import type { OptionError } from "../src/core/_check.ts";

const SANDBOX: EnvironmentInit = {
  baseUrl: "https://sandbox.partner.example/api/",
  pciBaseUrl: "https://pci.sandbox.partner.example/api/",
  tokenUrl: "https://idp.sandbox.partner.example/oauth/token",
  audience: "https://sandbox.partner.example",
};

/**
 * Each change of SANDBOX refused with a `TypeError` naming the field and the
 * rule it broke.
 */
function throwsNaming(
  cases: readonly (readonly [Record<string, unknown>, string, string])[],
) {
  for (const [change, option, rule] of cases) {
    throws(() => defineEnvironment({ ...SANDBOX, ...change }), (error) => {
      equal(error instanceof TypeError, true);
      deepStrictEqual(
        {
          option: (error as OptionError).option,
          rule: (error as OptionError).rule,
        },
        { option, rule },
      );
      return true;
    });
  }
}

Deno.test("defineEnvironment() parses and freezes the four values", () => {
  const environment = defineEnvironment(SANDBOX);
  equal(environment.baseUrl.href, "https://sandbox.partner.example/api/");
  equal(
    environment.pciBaseUrl.href,
    "https://pci.sandbox.partner.example/api/",
  );
  equal(environment.tokenUrl.href, SANDBOX.tokenUrl);
  equal(environment.audience, SANDBOX.audience);
  equal(Object.isFrozen(environment), true);
  deepStrictEqual(Object.keys(environment), [
    "baseUrl",
    "pciBaseUrl",
    "tokenUrl",
    "audience",
  ]);
});

Deno.test("defineEnvironment() accepts URL objects and normalises /api to /api/", () => {
  const environment = defineEnvironment({
    ...SANDBOX,
    baseUrl: new URL("https://sandbox.partner.example/v2/api"),
    pciBaseUrl: "https://pci.sandbox.partner.example/api",
  });
  equal(environment.baseUrl.href, "https://sandbox.partner.example/v2/api/");
  equal(
    environment.pciBaseUrl.href,
    "https://pci.sandbox.partner.example/api/",
  );
});

Deno.test("defineEnvironment() accepts http on loopback hosts only", () => {
  for (
    const host of ["localhost:8000", "127.0.0.1:1", "127.2.3.4", "[::1]:9"]
  ) {
    defineEnvironment({
      baseUrl: `http://${host}/api/`,
      pciBaseUrl: `http://${host}/pci/`,
      tokenUrl: `http://${host}/token`,
      audience: "a",
    });
  }
  throwsNaming([
    [
      { tokenUrl: "http://idp.example.com/token" },
      "tokenUrl",
      "must use https",
    ],
    [{ pciBaseUrl: "http://10.0.0.1/api/" }, "pciBaseUrl", "must use https"],
    [
      { baseUrl: "http://localhost.example.com/api/" },
      "baseUrl",
      "must use https",
    ],
  ]);
});

Deno.test("defineEnvironment() refuses a bare ? or # in a base, which leaves search and hash empty but stays in href", () => {
  const rule = "must not have a query or fragment";
  for (const end of ["?", "#", "?#"]) {
    throwsNaming([
      [{ baseUrl: `${SANDBOX.baseUrl}${end}` }, "baseUrl", rule],
      [
        { pciBaseUrl: new URL(`${SANDBOX.pciBaseUrl}${end}`) },
        "pciBaseUrl",
        rule,
      ],
    ]);
  }
  // What a base may hold is still kept: its href is the base alone.
  const kept = defineEnvironment({
    ...SANDBOX,
    baseUrl: "https://a.example/x%3F/api",
  });
  equal(kept.baseUrl.href, "https://a.example/x%3F/api/");
});

Deno.test("defineEnvironment() names the field of every other bad value", () => {
  throwsNaming([
    [
      { baseUrl: "https://sandbox.partner.example/v2/" },
      "baseUrl",
      "must end with /api/",
    ],
    [{ tokenUrl: "not a url" }, "tokenUrl", "must be an absolute URL"],
    [{ tokenUrl: "ftp://idp.example.com/token" }, "tokenUrl", "must use https"],
    [{ audience: "" }, "audience", "must be a non-empty string"],
    [
      { baseUrl: "https://sandbox.partner.example/api/?x=1" },
      "baseUrl",
      "must not have a query or fragment",
    ],
    [
      { tokenUrl: "https://user:pw@idp.example.com/token" },
      "tokenUrl",
      "must not hold credentials",
    ],
    // Never sent: it was taken silently, where a base's is refused.
    [
      { tokenUrl: "https://idp.example.com/token#audience=x" },
      "tokenUrl",
      "must not have a fragment",
    ],
  ]);
  // The message's format is the contract here (context, option, rule, what
  // was received), and what it shows of an address leaves credentials out.
  throws(
    () =>
      defineEnvironment({
        ...SANDBOX,
        tokenUrl: "https://user:pw@idp.example.com/token",
      }),
    {
      message:
        "Cannot define environment: 'tokenUrl' must not hold credentials: received https://idp.example.com/token",
    },
  );
  throws(
    () => defineEnvironment(null as unknown as EnvironmentInit),
    TypeError,
  );
  throwsNaming([
    [
      { baseUrl: 42 as unknown as string },
      "baseUrl",
      "must be a string or URL",
    ],
  ]);
});

Deno.test("defineEnvironment() accepts only https or loopback http, for any URL", () => {
  const host = fc.oneof(
    fc.domain(),
    fc.ipV4(),
    fc.constantFrom("localhost", "[::1]", "[::2]", "127.0.0.1"),
  );
  const scheme = fc.constantFrom("http", "https", "ftp", "ws");
  fc.assert(
    fc.property(scheme, host, (protocol, hostname) => {
      const tokenUrl = `${protocol}://${hostname}/token`;
      const loopback = hostname === "localhost" || hostname === "[::1]" ||
        /^127\./.test(hostname);
      const allowed = protocol === "https" || (protocol === "http" && loopback);
      try {
        defineEnvironment({ ...SANDBOX, tokenUrl });
        return allowed;
      } catch (error) {
        return !allowed && error instanceof TypeError;
      }
    }),
    { numRuns: 500 },
  );
});
