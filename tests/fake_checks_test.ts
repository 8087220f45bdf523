// The fake's options and controls refuse what they cannot do like every
// option of the module (DESIGN §4, "Bounds"; the code style's optionError):
// a TypeError or RangeError naming the `option`, and time options at most
// 2,147,483,647 ms, the longest wait a timer keeps.

import { equal, rejects, throws } from "node:assert/strict";
import {
  createFakePartnerService,
  type FakeRateLimit,
  startFakePartnerApi,
} from "@partner-api/client/testing";
import { requestToken } from "@partner-api/client/token";

const MAX = 2_147_483_647;

/** A check that `run` throws `Kind` naming `option`. */
function refuses(
  run: () => unknown,
  Kind: TypeErrorConstructor | RangeErrorConstructor,
  option: string,
): void {
  throws(run, (error: unknown) => {
    equal(error instanceof Kind, true, String(error));
    equal((error as { option?: string }).option, option, String(error));
    return true;
  });
}

Deno.test("the fake's insert, update and list names: each refusal names its option", () => {
  const fake = createFakePartnerService({ items: { organizations: 2 } });
  refuses(() => fake.insert("organizations", { name: "x" }), TypeError, "item");
  refuses(
    () => fake.insert("organizations", { organizationID: "org_000001" }),
    TypeError,
    "item",
  );
  refuses(
    () =>
      fake.update(
        "organizations",
        "org_000001",
        null as unknown as Record<string, string>,
      ),
    TypeError,
    "fields",
  );
  refuses(
    () =>
      fake.update("organizations", "org_000001", {
        companyName: {} as unknown as string,
      }),
    TypeError,
    "fields",
  );
  refuses(
    () =>
      fake.update("organizations", "org_000001", { organizationID: "other" }),
    TypeError,
    "fields",
  );
  refuses(() => fake.remove("merchants", "m-1"), TypeError, "list");
  // What is allowed still works.
  fake.insert("organizations", { organizationID: "org-new", companyName: "A" });
  equal(fake.update("organizations", "org-new", { companyName: "B" }), true);
});

Deno.test("the fake's time options are bounded like every time option: 2,147,483,647 ms is the most", () => {
  for (
    const [options, option] of [
      [{ latency: MAX + 1 }, "latency"],
      [{ latency: 0.5 }, "latency"],
      [
        { apiRateLimit: { requests: 1, interval: MAX + 1 } },
        "apiRateLimit.interval",
      ],
      [{ faults: [{ kind: "delay", ms: MAX + 1 }] }, "faults[0].ms"],
      // A ring of 2 ** 40 slots failed to allocate, naming no option (r178b F6).
      [
        { apiRateLimit: { requests: 2 ** 40, interval: 1000 } },
        "apiRateLimit.requests",
      ],
    ] as const
  ) {
    refuses(() => createFakePartnerService(options), RangeError, option);
  }
  // A clock that reads NaN or no number failed later, in the data's dates, naming no option (r178b F5).
  for (const now of [5, () => NaN, () => "now", () => undefined]) {
    refuses(
      () => createFakePartnerService({ now: now as unknown as () => number }),
      TypeError,
      "now",
    );
  }
  const fake = createFakePartnerService({
    latency: MAX,
    apiRateLimit: { requests: 1, interval: MAX },
    faults: [{ kind: "delay", ms: MAX }],
  });
  refuses(
    () => fake.injectApiFaults({ kind: "delay", ms: MAX + 1 }),
    RangeError,
    "faults[0].ms",
  );
  refuses(
    () => fake.injectTokenFaults({ kind: "drop" }, { kind: "delay", ms: -1 }),
    RangeError,
    "faults[1].ms",
  );
  refuses(
    () => fake.injectApiFaults({ kind: "status", status: 99 }),
    RangeError,
    "faults[0].status",
  );
  fake.injectApiFaults({ kind: "delay", ms: MAX });
  refuses(() => fake.insertTransactions(1.5), RangeError, "count");
  refuses(() => fake.insertTransactions(-1), RangeError, "count");
  refuses(
    () => createFakePartnerService({ listEnvelope: "bogus" as "array" }),
    TypeError,
    "listEnvelope",
  );
  fake.close();
});

Deno.test("the fake's apiRateLimit without one of its fields, or not an object (plain JavaScript), is refused naming it (TypeError, as a limiter's is), before anything starts: a missing field was taken as 0, no limit; null threw the runtime's TypeError, naming no option", async () => {
  for (
    const [limit, option] of [
      [{ requests: 900 }, "apiRateLimit.interval"],
      [{ interval: 300_000 }, "apiRateLimit.requests"],
      [{}, "apiRateLimit.requests"],
      [null, "apiRateLimit"],
      [900, "apiRateLimit"],
    ] as const
  ) {
    const apiRateLimit = limit as unknown as FakeRateLimit;
    refuses(
      () => createFakePartnerService({ apiRateLimit }),
      TypeError,
      option,
    );
    // The served fake too: no server left listening (the resource sanitizer).
    await rejects(startFakePartnerApi({ apiRateLimit }), (error: unknown) => {
      equal(error instanceof TypeError, true, String(error));
      equal((error as { option?: string }).option, option, String(error));
      return true;
    });
  }
});

Deno.test("the fake's items, quota, credentials and churn that are no object are refused naming them, and an item count past 10 million is a RangeError: a number was taken as the defaults, and 1e9 items ran the process out of memory", () => {
  for (const part of ["items", "quota", "credentials", "churn"]) {
    for (const bad of [5, "x", null]) {
      refuses(
        () => createFakePartnerService({ [part]: bad } as never),
        TypeError,
        part,
      );
    }
  }
  refuses(
    () => createFakePartnerService({ items: { transactions: 1e9 } }),
    RangeError,
    "items.transactions",
  );
});

Deno.test("the fake's tokenLifetime, beyondMaxLimit, seed and a fault's retryAfter are checked: a lifetime is a time option (at most 2,147,483,647 ms, so its expires_in is one the client takes)", async () => {
  for (
    const [options, option] of [
      [{ tokenLifetime: MAX + 1 }, "tokenLifetime"],
      [{ tokenLifetime: 1e15 }, "tokenLifetime"],
      [{ tokenLifetime: 1.5 }, "tokenLifetime"],
      [{ seed: 0.5 }, "seed"],
      [
        { faults: [{ kind: "status", status: 429, retryAfter: 2_147_484 }] },
        "faults[0].retryAfter",
      ],
    ] as const
  ) {
    refuses(() => createFakePartnerService(options), RangeError, option);
  }
  const text = { seed: "x" as unknown as number }; // no number: the type is wrong
  refuses(() => createFakePartnerService(text), TypeError, "seed");
  const drop = { beyondMaxLimit: "drop" as "cut" };
  refuses(() => createFakePartnerService(drop), TypeError, "beyondMaxLimit");
  // The option that turns Retry-After on is a boolean, not a number of seconds.
  const seconds = { retryAfter: MAX + 1 as unknown as boolean };
  refuses(() => createFakePartnerService(seconds), TypeError, "retryAfter");
  const fake = createFakePartnerService({
    tokenLifetime: MAX,
    seed: -3,
    beyondMaxLimit: "cut",
    faults: [{ kind: "status", status: 429, retryAfter: 2_147_483 }],
  });
  for (const retryAfter of [-1, 0.5, 1e15]) {
    refuses(
      () => fake.injectTokenFaults({ kind: "status", status: 503, retryAfter }),
      RangeError,
      "faults[0].retryAfter",
    );
  }
  const environment = fake.environmentAt(
    "http://127.0.0.1:1",
    "http://127.0.0.1:2",
  );
  const fetch = (input: RequestInfo | URL, init?: RequestInit) =>
    fake.handle(new Request(input, init));
  const target = { ...environment, ...fake.credentials, fetch };
  await rejects(requestToken(target), { status: 429 }); // the injected fault
  const token = await requestToken(target);
  equal(token.expiresIn, Math.floor(MAX / 1000));
  fake.close();
});

Deno.test("the fake refuses at start an onRequest that is not a function, tokenBodyFormats it does not know, faults that are not an array or not faults (kind, status, body) and a port above 65,535, naming each: they broke only on a request, or threw untyped", async () => {
  for (
    const [options, Kind, option] of [
      [{ onRequest: 5 }, TypeError, "onRequest"],
      [{ tokenBodyFormats: "json" }, TypeError, "tokenBodyFormats"],
      [{ tokenBodyFormats: ["xml"] }, TypeError, "tokenBodyFormats"],
      [{ tokenBodyFormats: [] }, TypeError, "tokenBodyFormats"], // r213b F10: every token request refused
      [{ faults: "drop" }, TypeError, "faults"],
      // A mistyped fault answered a 500 of its own, which a test took for the one it scripted.
      [{ faults: [null] }, TypeError, "faults[0]"],
      [{ faults: [{ kind: "bogus" }] }, TypeError, "faults[0].kind"],
      [{ faults: [{ kind: "status" }] }, TypeError, "faults[0].status"],
      [
        { faults: [{ kind: "status", status: 700 }] },
        RangeError,
        "faults[0].status",
      ],
      [{ faults: [{ kind: "body", body: 5 }] }, TypeError, "faults[0].body"],
      // Statuses that carry no body, and a header no Response takes: a 500 of the fake's own.
      [
        { faults: [{ kind: "status", status: 204 }] },
        RangeError,
        "faults[0].status",
      ],
      [
        { faults: [{ kind: "body", body: "", status: 304 }] },
        RangeError,
        "faults[0].status",
      ],
      [
        { faults: [{ kind: "drop", headers: { "bad name": "x" } }] },
        TypeError,
        "faults[0].headers",
      ],
      // Pairs or a Headers: the fake sets an object's entries (a header "0", or none).
      [
        { faults: [{ kind: "drop", headers: [["x-a", "1"]] }] },
        TypeError,
        "faults[0].headers",
      ],
      [{ port: 65_536 }, RangeError, "port"],
      [{ pciPort: 70_000 }, RangeError, "pciPort"],
    ] as const
  ) {
    // No server left listening (the resource sanitizer).
    await rejects(startFakePartnerApi(options as object), (error: unknown) => {
      equal(error instanceof Kind, true, String(error));
      equal((error as { option?: string }).option, option, String(error));
      return true;
    });
  }
});

Deno.test("the fake's drop fault errors its body after a few bytes, on any server: it ended the body short of its content-length, which only Deno.serve took for a cut (Bun.serve and workerd sent a whole short body, read as a malformed 200)", async () => {
  const service = createFakePartnerService();
  service.injectTokenFaults({ kind: "drop" });
  service.injectApiFaults({ kind: "drop" });
  const { tokenUrl, baseUrl } = service.environmentAt(
    "http://127.0.0.1:1",
    "http://127.0.0.1:2",
  );
  const token = new Request(tokenUrl, { method: "POST" });
  const page = new Request(new URL("organizations", baseUrl));
  for (
    const answer of [await service.handle(token), await service.handle(page)]
  ) {
    equal(answer.status, 200);
    await rejects(answer.text());
  }
});
