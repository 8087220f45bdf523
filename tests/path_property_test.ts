import { equal, ok, rejects } from "node:assert/strict";
import fc from "fast-check";
import { createClient } from "../src/client/mod.ts";
import { startFakePartnerApi } from "../src/testing/mod.ts";

Deno.test("client.fetch() never sends the token outside the environment, for any path", async () => {
  await using api = await startFakePartnerApi();
  await using elsewhere = await startFakePartnerApi();
  const base = api.environment.baseUrl;
  const authorized: URL[] = [];
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    if (request.headers.has("authorization")) {
      authorized.push(new URL(request.url));
    }
    return fetch(request);
  };
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
    fetch: recording,
  });
  const segment = fc.constantFrom(
    "organizations",
    "..",
    "%2e%2e",
    ".%2E",
    "..%2f..%2fadmin",
    "%5C..",
    "",
    ".",
    "a b",
    "x?y=1",
    "#frag",
    "\\",
    "//",
    "@",
    "..;",
    "%252e%252e%252f",
    "．．",
    "․",
    "a;b",
    "admin%ff",
    "%c0%ae%c0%ae",
    "%e0%80%ae",
  );
  const relative = fc.array(segment, { maxLength: 6 }).map((parts) =>
    parts.join("/")
  );
  const leading = fc.constantFrom("", "/", "//", "\\\\", "/\\");
  const origin = fc.constantFrom(
    base.origin,
    elsewhere.environment.baseUrl.origin,
    api.environment.pciBaseUrl.origin,
    "https://evil.example",
    `http://user:pw@${base.host}`,
  );
  const absolute = fc.tuple(origin, relative).map(([o, r]) => `${o}/${r}`);
  const path = fc.oneof(
    fc.tuple(leading, relative).map(([l, r]) => l + r),
    absolute,
    absolute.map((href) => new URL(href)),
  );
  await fc.assert(
    fc.asyncProperty(path, async (candidate) => {
      const before = authorized.length;
      try {
        await (await client.fetch(candidate)).body?.cancel();
      } catch (error) {
        ok(error instanceof TypeError, String(error));
        ok(authorized.length === before, "a refused path sends nothing");
      }
      for (const url of authorized.slice(before)) {
        ok(
          url.origin === base.origin &&
            url.pathname.startsWith(base.pathname) &&
            url.username === "" && url.password === "" &&
            !/%(2f|5c)|%25[0-9a-f]{2}|;|%EF%BC%8E|%E2%80%A4|%c[01]|%e0%[89]/i
              .test(
                url.pathname,
              ),
          `the token went to ${url.href}`,
        );
      }
    }),
    // A fixed seed: how many of the random paths may be sent varies by run.
    { numRuns: 500, seed: 20261124 },
  );
  ok(
    authorized.length > 30, // 37 of the 500 at this seed: most hold a form refused
    `only ${authorized.length} paths were sent at all`,
  );
  ok(elsewhere.apiRequests === 0);
});

Deno.test("paths a server may read as outside the base are refused before anything is sent, also beside an invalid or overlong escape", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const risky = [
    "..;/admin",
    "%252e%252e%252fadmin",
    "organizations%252fx",
    "．．/admin",
    "organizations/．．/．．/admin",
    "․․/admin",
    "organizations／x",
    "organizations＼x",
    "．．/admin%ff",
    "%ff/．．/admin",
    "%c0%ae%c0%ae/admin",
    "organizations/%c0%ae%c0%ae%c0%af",
    "%e0%80%ae%e0%80%ae/admin",
    // Forms the URL parser tidies into a path under the base: refused as given.
    "organizations\\x",
    "\\organizations",
    "a/../organizations",
    "organizations/.",
    "./organizations",
    "organizations/%2E/x",
    "%2e%2E/organizations",
    "organizations%zz",
    "organizations%2",
    // Tabs and line breaks the parser drops, and spaces or controls it trims, hide nothing.
    "a/.\t./organizations",
    "..\t/organizations",
    " ../organizations",
    "a/%2e\t%2e/organizations",
    "a/..\r/organizations",
    "\u001f../organizations",
  ];
  for (const path of risky) {
    await rejects(client.fetch(path), TypeError, path);
    await rejects(client.pciFetch(path), TypeError, path);
  }
  // An invalid escape in a URL as given, which the parser keeps as it is.
  const base = api.environment.baseUrl.href;
  for (const end of ["organizations%zz", "a%2", "organizations%"]) {
    await rejects(client.fetch(new URL(base + end)), TypeError, end);
  }
  equal(api.tokenRequests, 0, "refused before even a token is asked for");
  equal(api.apiRequests, 0);
});

Deno.test("a URL path whose own href throws rejects with its own error, not as an address the parser refused (outside review r122 F3); one whose href is no address is refused as that text (r123 F1)", async () => {
  await using api = await startFakePartnerApi();
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  class Broken extends URL {
    override get href(): string {
      throw new RangeError("a href of its own");
    }
  }
  const path = new Broken("organizations", api.environment.baseUrl);
  await rejects(client.fetch(path), RangeError);
  // One whose href the parser refuses is refused as that text would be (its raw error quoted it whole: r123 F1).
  class Invalid extends URL {
    override get href(): string {
      return `https://a b/${"x".repeat(10_000)}`;
    }
  }
  const invalid = new Invalid("organizations", api.environment.baseUrl);
  await rejects(
    client.fetch(invalid),
    (error: TypeError & { option: string }) =>
      error instanceof TypeError && error.option === "path" &&
      error.message.length <= 2_000,
  );
});
