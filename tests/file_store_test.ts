// The file token store of ./store (issue 39: the CLI's encrypted cache,
// behind the store's public door): what it keeps, what it refuses to read,
// and how it fails. The CLI's runs over it are in cli_test.ts and
// process/cli_cache_test.ts.

import {
  deepStrictEqual,
  equal,
  ok,
  rejects,
  throws,
} from "node:assert/strict";
import {
  clearFileTokenStore,
  createFileTokenStore,
  type FileTokenStoreOptions,
} from "../src/store/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import {
  createFakePartnerService,
  type FakePartnerApi,
  startFakePartnerApi,
} from "../src/testing/mod.ts";
import { clientDigest } from "./_store_keys.ts";
import { systemClockReads, systemNow } from "./_system_clock.ts";
import { manualClock } from "./_helpers.ts";

/** A fresh folder under .test-tmp. */
async function folder(): Promise<string> {
  await Deno.mkdir(".test-tmp", { recursive: true });
  return await Deno.makeTempDir({ dir: ".test-tmp", prefix: "file-store-" });
}

/**
 * A file token store in `dir` for `api`'s client, the notices it gives,
 * and a provider over it.
 */
function storeIn(api: FakePartnerApi, dir: string) {
  const notices: string[] = [];
  const store = createFileTokenStore({
    folder: dir,
    clientSecret: api.credentials.clientSecret,
    onNotice: (line) => void notices.push(line),
  });
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    store,
  });
  return { store, notices, provider };
}

Deno.test("a file token store keeps one sealed file per client, none holding the token in clear", async () => {
  await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
  const dir = await folder();
  const { store, provider } = storeIn(api, dir);
  const token = await provider.getToken();
  const files = [...Deno.readDirSync(dir)].map((entry) => entry.name);
  equal(files.length, 1);
  ok(files[0]!.endsWith(".token"));
  const bytes = await Deno.readFile(`${dir}/${files[0]}`);
  equal(new TextDecoder().decode(bytes).includes(token.accessToken), false);
  const record = await store.recordFor({
    ...api.environment,
    clientId: api.credentials.clientId,
  });
  equal(record?.token?.accessToken, token.accessToken);
  equal(record?.quota?.buckets[0]?.remaining, 9);
  equal(api.tokenRequests, 1);
});

Deno.test("a file token store opened with another secret starts afresh", async () => {
  await using api = await startFakePartnerApi();
  const dir = await folder();
  const options = { ...api.environment, ...api.credentials };
  const first = createFileTokenStore({
    folder: dir,
    clientSecret: api.credentials.clientSecret,
  });
  await createTokenProvider({ ...options, store: first }).getToken();
  const other = createFileTokenStore({ folder: dir, clientSecret: "other" });
  const client = { ...api.environment, clientId: api.credentials.clientId };
  equal(await other.recordFor(client), undefined);
  ok(await first.recordFor(client));
});

Deno.test("providers on two file token stores of one folder spend one token, leaving no lock behind", async () => {
  await using api = await startFakePartnerApi();
  const dir = await folder();
  // A slow token endpoint: the second provider would request meanwhile.
  api.injectTokenFaults({ kind: "delay", ms: 200 });
  const providers = [1, 2].map(() =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      store: createFileTokenStore({
        folder: dir,
        clientSecret: api.credentials.clientSecret,
      }),
    })
  );
  const [first, second] = await Promise.all(
    providers.map((provider) => provider.getToken()),
  );
  equal(first!.accessToken, second!.accessToken);
  equal(api.tokenRequests, 1);
  equal([...Deno.readDirSync(dir)].length, 1);
});

Deno.test("a file token store ignores a path that is not a small regular file, with a notice", async () => {
  await using api = await startFakePartnerApi();
  const dir = await folder();
  const { store, notices, provider } = storeIn(api, dir);
  await provider.getToken();
  const [file] = [...Deno.readDirSync(dir)].map((entry) => entry.name);
  await Deno.remove(`${dir}/${file}`);
  await Deno.mkdir(`${dir}/${file}`);
  const client = { ...api.environment, clientId: api.credentials.clientId };
  equal(await store.recordFor(client), undefined);
  equal(notices.length, 1);
});

Deno.test("a damaged token file is said in a notice naming it, and costs one token request, once: the next process reads the file it rewrote (r178a F6: a flipped bit cost a token, unsaid)", async () => {
  await using api = await startFakePartnerApi();
  const dir = await folder();
  await storeIn(api, dir).provider.getToken();
  const [file] = [...Deno.readDirSync(dir)].map((entry) => entry.name);
  const bytes = await Deno.readFile(`${dir}/${file}`);
  bytes[bytes.length - 1]! ^= 1;
  await Deno.writeFile(`${dir}/${file}`, bytes);
  const { notices, provider } = storeIn(api, dir);
  await provider.getToken();
  equal(api.tokenRequests, 2);
  equal(notices.length, 1);
  ok(notices[0]!.includes(file!), notices[0]);
  const next = storeIn(api, dir);
  await next.provider.getToken();
  deepStrictEqual([api.tokenRequests, next.notices], [2, []]);
});

Deno.test("a file token store that cannot write says so and still serves", async () => {
  await using api = await startFakePartnerApi();
  const dir = `${await folder()}/not-a-folder`;
  await Deno.writeTextFile(dir, "a file where the folder should be");
  const { notices, provider } = storeIn(api, dir);
  ok(api.isValidToken((await provider.getToken()).accessToken));
  ok(notices.length >= 1);
  equal(
    notices.some((line) => line.includes(api.credentials.clientSecret)),
    false,
  );
});

Deno.test("processes whose now runs a minute ahead of the file system's clock share one token request: the lock is stamped by now as it is made, in its content too (by the file system's clock it read as stale at once, and each process requested; a lock read between its making and its utime did too)", async () => {
  const now = () => Date.now() + 60_000;
  for (let round = 0; round < 20; round++) {
    await using api = await startFakePartnerApi();
    api.injectTokenFaults({ kind: "delay", ms: 30 });
    const dir = await folder();
    const providers = Array.from({ length: 8 }, () =>
      createTokenProvider({
        ...api.environment,
        ...api.credentials,
        now,
        store: createFileTokenStore({
          folder: dir,
          clientSecret: api.credentials.clientSecret,
          now,
        }),
      }));
    const tokens = await Promise.all(providers.map((p) => p.getToken()));
    equal(new Set(tokens.map((token) => token.accessToken)).size, 1);
    equal(api.tokenRequests, 1, `round ${round}`);
  }
});

Deno.test("clearFileTokenStore removes token files only, and a missing folder holds none", async () => {
  await using api = await startFakePartnerApi();
  const dir = await folder();
  await storeIn(api, dir).provider.getToken();
  await Deno.writeTextFile(`${dir}/notes.txt`, "not a token");
  equal(await clearFileTokenStore(dir), 1);
  deepStrictEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["notes.txt"]);
  equal(await clearFileTokenStore(`${dir}/missing`), 0);
  // Another value for the folder (its URL, the store's options) is refused, not 0 with the token left.
  await storeIn(api, dir).provider.getToken();
  const url = new URL(dir, `file://${Deno.cwd()}/`);
  for (const other of [url, { folder: dir }, "", null]) {
    await rejects(clearFileTokenStore(other as never), {
      name: "TypeError",
      option: "folder",
    });
  }
  equal(await clearFileTokenStore(dir), 1);
});

Deno.test("createFileTokenStore refuses bad options by name", () => {
  const cases: [Partial<FileTokenStoreOptions>, string][] = [
    [{ clientSecret: "s" }, "folder"],
    [{ folder: "", clientSecret: "s" }, "folder"],
    [{ folder: ".test-tmp/x" }, "clientSecret"],
    [
      { folder: ".test-tmp/x", clientSecret: "s", onNotice: 1 as never },
      "onNotice",
    ],
    [{ folder: ".test-tmp/x", clientSecret: "s", now: 1 as never }, "now"],
  ];
  for (const [options, option] of cases) {
    throws(
      () => createFileTokenStore(options as FileTokenStoreOptions),
      { name: "TypeError", option },
    );
  }
});

Deno.test("a file token store reads the time only through its `now`: a lock stale by that clock is taken over at once", async () => {
  // A minute ahead of the system clock: a lock stamped just now by the
  // system's is stale by this one (5 s), and only this one is read.
  const clock = () => systemNow() + 60_000;
  const service = createFakePartnerService({ now: clock });
  const environment = service.environmentAt(
    "https://partner.test",
    "https://pci.test",
  );
  const { credentials } = service;
  const dir = await folder();
  const lock = `${dir}/${await clientDigest({
    environment,
    credentials,
  })}.token.lock`;
  await Deno.writeTextFile(lock, JSON.stringify({ pid: 1, id: "another" }));
  const provider = createTokenProvider({
    ...environment,
    ...credentials,
    fetch: (input, init) => service.handle(new Request(input, init)),
    now: clock,
    // A short request budget: a store that waited the lock out would stop
    // waiting after it and 5 s.
    timeout: 1_000,
    retry: false,
    store: createFileTokenStore({
      folder: dir,
      clientSecret: credentials.clientSecret,
      now: clock,
    }),
  });
  equal(await systemClockReads(() => provider.getToken()), 0);
  equal(service.tokenRequests, 1);
  // Taken over and released: a store that waited it out would leave it.
  deepStrictEqual([...Deno.readDirSync(dir)].map((e) => e.name.slice(-6)), [
    ".token",
  ]);
});

Deno.test("a file token store takes over an empty lock (read while being made, or its maker died then) once seen unchanged for 5 s, and leaves none", async () => {
  await takesOverPlantedLock("", undefined, 1_000);
});

Deno.test("a file token store takes over a dead run's lock dated an hour ahead (its clock stepped back since) once seen unchanged for 5 s, and leaves none (issue 46)", async () => {
  // Each reading is 5 s later: a store judging by the lock's stamp waits out
  // its request budget (and leaves the lock for the next run to wait on).
  const content = JSON.stringify({ pid: 1, id: "dead" });
  await takesOverPlantedLock(content, systemNow() + 3_600_000, 5_000);
});

/**
 * Plants a lock of `content` (its mtime at `stamp`, when given), gets a token
 * on a clock that moves `step` ms a reading, and asserts one token request and
 * no lock left.
 */
async function takesOverPlantedLock(
  content: string,
  stamp: number | undefined,
  step: number,
) {
  await using api = await startFakePartnerApi();
  const dir = await folder();
  const lock = `${dir}/${await clientDigest(api)}.token.lock`;
  await Deno.writeTextFile(lock, content);
  if (stamp !== undefined) {
    await Deno.utime(lock, new Date(stamp), new Date(stamp));
  }
  let time = systemNow();
  const clock = () => time += step;
  const { clientSecret } = api.credentials;
  const provider = createTokenProvider({
    ...api.environment,
    ...api.credentials,
    now: clock,
    store: createFileTokenStore({ folder: dir, clientSecret, now: clock }),
  });
  await provider.getToken();
  equal(api.tokenRequests, 1);
  deepStrictEqual([...Deno.readDirSync(dir)].map((e) => e.name.slice(-6)), [
    ".token",
  ]);
}

Deno.test("a file token store keeps the token still valid when its refresh fails: another process serves it, asking nothing", async () => {
  const clock = manualClock();
  await using api = await startFakePartnerApi({
    now: clock,
    tokenLifetime: 3_600_000,
  });
  const dir = await folder();
  const background: Promise<unknown>[] = [];
  const provider = () =>
    createTokenProvider({
      ...api.environment,
      ...api.credentials,
      now: clock,
      retry: false,
      store: createFileTokenStore({
        folder: dir,
        clientSecret: api.credentials.clientSecret,
        now: clock,
      }),
      waitUntil: (promise) => void background.push(promise),
    });
  const first = provider();
  const token = await first.getToken();
  clock.set(token.expiresAt - 60_000);
  api.injectTokenFaults({ kind: "status", status: 503 });
  equal(await first.getToken(), token);
  await Promise.all(background);
  equal(api.tokenRequests, 2, "the refresh was asked for, and refused");
  const next = await provider().getToken();
  equal(next.accessToken, token.accessToken);
  equal(api.tokenRequests, 2, "the failure's cooldown holds, the token serves");
});

Deno.test("ten processes that find a dead run's lock at once take it over one at a time: one token request a round, 16 rounds (r178a F3: the lock moved aside and put back lost a third process's fresh one; 2 or 3 requested in 1 round of 8 to 12)", async () => {
  const service = createFakePartnerService();
  const environment = service.environmentAt(
    "https://partner.test",
    "https://pci.test",
  );
  const { credentials } = service;
  const name = `${await clientDigest({ environment, credentials })}.token`;
  // The token request takes a while, so that the others come while it is held.
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    await new Promise((done) => setTimeout(done, 30));
    return await service.handle(new Request(input, init));
  };
  for (let round = 0; round < 16; round++) {
    const dir = await folder();
    const dead = Date.now() - 60_000;
    await Deno.writeTextFile(
      `${dir}/${name}.lock`,
      JSON.stringify({ pid: 1, id: "dead", at: dead }),
    );
    await Deno.utime(`${dir}/${name}.lock`, new Date(dead), new Date(dead));
    const before = service.tokenRequests;
    await Promise.all(Array.from({ length: 10 }, () =>
      createTokenProvider({
        ...environment,
        ...credentials,
        fetch,
        retry: false,
        store: createFileTokenStore({
          folder: dir,
          clientSecret: credentials.clientSecret,
        }),
      }).getToken()));
    equal(service.tokenRequests - before, 1, `round ${round}`);
    deepStrictEqual([...Deno.readDirSync(dir)].map((e) => e.name), [name]);
  }
});
