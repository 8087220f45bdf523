// A refused token request's cooldown, as the store shares it: a 400 or 415 is
// about how the request was sent, so it holds providers that send it that way
// only; any other failure holds every provider on the store (outside review
// r57 F7: following the hint's "--token-body form", the CLI was refused by the
// cooldown of the JSON request it had just been told to change).

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { TokenRequestError } from "../src/core/errors.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { manualClock } from "./_helpers.ts";
import {
  createFileTokenStore,
  createMemoryTokenStore,
  type TokenRecord,
  type TokenStore,
} from "../src/store/mod.ts";
import {
  type FakeFault,
  type FakePartnerApi as FakeApi,
  startFakePartnerApi,
} from "../src/testing/mod.ts";

type Way = {
  bodyFormat: "json" | "form";
  clientAuthentication: "body" | "basic";
};

const STORES: [string, (folder: string) => TokenStore][] = [
  ["memory", () => createMemoryTokenStore()],
  ["file", (folder) => createFileTokenStore({ folder, clientSecret: "s" })],
];

/** Runs `ways` in turn, each as a process of its own (a fresh provider) on one store: per run, the requests sent and the outcome. */
async function runs(api: FakeApi, store: TokenStore, ways: readonly Way[]) {
  const outcomes: string[] = [];
  for (const way of ways) {
    const before = api.tokenRequests;
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      ...way,
      store,
      retry: false,
    });
    const outcome = await provider.getToken().then(
      () => "token",
      (error: unknown) => {
        ok(error instanceof TokenRequestError, String(error));
        return `${error.status ?? error.reason}`;
      },
    );
    outcomes.push(`${api.tokenRequests - before} ${outcome}`);
  }
  return outcomes;
}

const json: Way = { bodyFormat: "json", clientAuthentication: "body" };
const form: Way = { bodyFormat: "form", clientAuthentication: "body" };
const jsonBasic: Way = { bodyFormat: "json", clientAuthentication: "basic" };

for (const [name, open] of STORES) {
  Deno.test(`${name} store: a 400's cooldown holds requests sent the refused way, not another way (which gets its token)`, async () => {
    await Deno.mkdir(".test-tmp", { recursive: true });
    const folder = await Deno.makeTempDir({ dir: ".test-tmp" });
    try {
      await using api = await startFakePartnerApi({
        tokenBodyFormats: ["form"],
      });
      const outcomes = await runs(api, open(folder), [json, json, form, json]);
      // JSON refused; JSON again held (no request); a form body is another
      // way: sent, it gets the token, which every provider then takes from
      // the store.
      deepStrictEqual(outcomes, ["1 400", "0 400", "1 token", "0 token"]);
    } finally {
      await Deno.remove(folder, { recursive: true });
    }
  });

  Deno.test(`${name} store: two ways refused in a row are one cooldown for every way, escalated: fresh providers sending by turns are held (each overwrote the other's refusal and sent every time: r68 F1)`, async () => {
    await Deno.mkdir(".test-tmp", { recursive: true });
    const folder = await Deno.makeTempDir({ dir: ".test-tmp" });
    try {
      const faults: FakeFault[] = Array(8).fill({
        kind: "status",
        status: 400,
      });
      await using api = await startFakePartnerApi({ faults });
      const store = open(folder);
      const ways = [json, form, json, form, jsonBasic, json, form];
      const outcomes = await runs(api, store, ways);
      deepStrictEqual(outcomes, [
        "1 400",
        "1 400",
        "0 400",
        "0 400",
        "0 400",
        "0 400",
        "0 400",
      ]);
    } finally {
      await Deno.remove(folder, { recursive: true });
    }
  });

  Deno.test(`${name} store: a failure that is not about the way (a 503) holds every provider on the store, whatever its way`, async () => {
    await Deno.mkdir(".test-tmp", { recursive: true });
    const folder = await Deno.makeTempDir({ dir: ".test-tmp" });
    try {
      const faults: FakeFault[] = [{ kind: "status", status: 503 }];
      await using api = await startFakePartnerApi({ faults });
      const outcomes = await runs(api, open(folder), [json, form, jsonBasic]);
      deepStrictEqual(outcomes, ["1 503", "0 503", "0 503"]);
    } finally {
      await Deno.remove(folder, { recursive: true });
    }
  });
}

Deno.test("long-lived providers of two ways, each with a failure of its own (a 503 before), share one cooldown once both ways are refused (each kept escalating on its own, its old failure hiding the other way's refusal: r70 F1)", async () => {
  const faults: FakeFault[] = [
    { kind: "status", status: 503 },
    ...Array(10).fill({ kind: "status", status: 400 }),
  ];
  await using api = await startFakePartnerApi({ faults });
  const clock = manualClock();
  const store = createMemoryTokenStore();
  const provider = (way: Way) =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      ...way,
      store,
      now: clock,
      retry: false,
    });
  const providers = { json: provider(json), form: provider(form) };
  const sent: number[] = [];
  const calls = [
    [0, "json"],
    [50, "form"],
    [10_100, "json"], // past the 503's 10 s: JSON refused
    [10_200, "form"], // another way: sent, refused, so both ways are
    [30_200, "json"], // held by the one cooldown (40 s) ...
    [30_300, "form"],
    [50_300, "json"], // ... until it ends
    [50_400, "form"],
  ] as const;
  const start = clock();
  for (const [at, way] of calls) {
    clock.set(start + at);
    const before = api.tokenRequests;
    await providers[way].getToken().catch(() => {});
    sent.push(api.tokenRequests - before);
  }
  deepStrictEqual(sent, [1, 0, 1, 1, 0, 0, 1, 0]);
});

Deno.test("a 400's failure record names the way it was sent, a 503's none; a sentAs that is no text, or on a 503, holds every way (r68 F2: the cooldown was dropped)", async () => {
  const records = new Map<string, TokenRecord>();
  const store: TokenStore = {
    get: (key) => Promise.resolve(records.get(key)),
    set: (key, record) => Promise.resolve(void records.set(key, record)),
  };
  const faults: FakeFault[] = [{ kind: "status", status: 503 }];
  {
    await using api = await startFakePartnerApi({ faults });
    deepStrictEqual(await runs(api, store, [form]), ["1 503"]);
  }
  equal([...records.values()][0]?.failure?.sentAs, undefined);
  records.clear();
  await using api = await startFakePartnerApi({ tokenBodyFormats: ["form"] });
  deepStrictEqual(await runs(api, store, [jsonBasic]), ["1 400"]);
  const [key, record] = [...records][0]!;
  equal(record.failure?.sentAs, "json basic");
  deepStrictEqual(await runs(api, store, [jsonBasic]), ["0 400"]);
  // Two ways refused in a row: one cooldown for every way, escalated.
  deepStrictEqual(await runs(api, store, [json]), ["1 400"]);
  const both = records.get(key)!.failure!;
  deepStrictEqual([both.sentAs, both.failures], [undefined, 2]);
  // A record's sentAs that is no text, or on a failure not about the way (a
  // 503), holds every way, as a record written before there was any.
  for (const [status, sentAs] of [[400, 5], [503, "form body"]] as const) {
    const failure = { ...record.failure!, status, sentAs: sentAs as never };
    records.set(key, { failure });
    const held = `0 ${status}`;
    deepStrictEqual(await runs(api, store, [json, form]), [held, held]);
  }
});
