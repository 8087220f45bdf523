// The fake's options and controls refuse what they cannot do like every
// option of the module (DESIGN §4, "Bounds"; the code style's optionError):
// a TypeError or RangeError naming the `option`, and time options at most
// 2,147,483,647 ms, the longest wait a timer keeps.

import { equal, throws } from "node:assert/strict";
import { createFakePartnerService } from "@partner-api/client/testing";

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
    ] as const
  ) {
    refuses(() => createFakePartnerService(options), RangeError, option);
  }
  refuses(
    () => createFakePartnerService({ now: 5 as unknown as () => number }),
    TypeError,
    "now",
  );
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
  fake.injectApiFaults({ kind: "delay", ms: MAX });
  fake.close();
});
