// Review r7: a command function that runs no script (the stand-in redis.ts's
// example showed before set() became a compare-and-set: a Map knowing GET,
// SET and DEL, answering null to anything else) made set() take EVAL's null
// for a write another landed first: it read and swapped 100 times (200
// commands), then gave up as if the record kept changing. A swap or publish
// script's reply the script never gives now fails at once: a TypeError naming
// the `command` option and the reply's type, never its value.

import { equal, ok, rejects } from "node:assert/strict";
import { createRedisTokenStore } from "../src/store/redis.ts";
import type { TokenRecord, TokenStore } from "../src/store/mod.ts";
import { createTokenProvider } from "../src/token/mod.ts";
import { drive, inProcessFake } from "./_fast_setup.ts";
import { holdsAnywhere, withFakeTimers } from "./_helpers.ts";

/** A Map standing in for Redis: GET, GETRANGE (whole), SET, DEL; EVAL answered by `evaluate`, the rest null. */
function standIn(
  evaluate: () => unknown = () => null,
  now: () => number = Date.now,
) {
  const data = new Map<string, string>();
  const sent: string[] = [];
  const command = ([name, key, value]: string[]) => {
    sent.push(name!);
    if (name === "EVAL") return Promise.resolve(evaluate());
    if (name === "SET") return Promise.resolve((data.set(key!, value!), "OK"));
    if (name === "DEL") return Promise.resolve(Number(data.delete(key!)));
    const known = name === "GET" || name === "GETRANGE";
    return Promise.resolve(known ? data.get(key!) ?? null : null);
  };
  return { data, sent, store: createRedisTokenStore({ command, now }) };
}

/** How many scripts `sent` ran: what a reply the script never gives costs. */
function scriptsRun(sent: readonly string[]) {
  return sent.filter((name) => name === "EVAL").length;
}

const record: TokenRecord = { blockedUntil: 1_900_000_000_000 };

/** Asserts that coordinate() fails, a TypeError naming `command`; returns how many token requests it made. */
async function refusedRequests(store: TokenStore, requestBudget: number) {
  let requests = 0;
  await rejects(
    store.coordinate!("client", {
      settled: () => false,
      request: () => (requests++, Promise.resolve(record)),
      signal: new AbortController().signal,
      requestBudget,
    }),
    { name: "TypeError", option: "command" },
  );
  return requests;
}

Deno.test("Redis: the token store holds its encryption key and command where no user of the store reads them: not as properties, not in what inspecting it shows", async () => {
  const key = await crypto.subtle.generateKey(
    { name: "AES-GCM", length: 256 },
    true,
    ["encrypt", "decrypt"],
  );
  const command = () => Promise.resolve(null);
  const store = createRedisTokenStore({ command, encryptionKey: key });
  ok(!holdsAnywhere(store, key), "the key is reachable from the store");
  ok(!holdsAnywhere(store, command), "command is reachable from the store");
  ok(!Deno.inspect(store, { depth: 10 }).includes("CryptoKey"));
});

Deno.test("Redis: set() through a command function that answers EVAL with null fails at once, a TypeError naming `command`, after one read and one EVAL", async () => {
  const { data, sent, store } = standIn();
  await rejects(store.set("client", record), {
    name: "TypeError",
    option: "command",
  });
  equal(scriptsRun(sent), 1);
  equal(data.size, 0);
});

Deno.test("Redis: a swap script's reply of another kind (a text that may hold a token) is named by its type only", async () => {
  const token = `tok_${crypto.randomUUID()}`;
  const { sent, store } = standIn(() => token);
  const error = await store.update!("client", () => record).catch((e) => e);
  equal(error?.name, "TypeError");
  equal(error.option, "command");
  ok(!`${error.message} ${error.stack} ${Deno.inspect(error)}`.includes(token));
  equal(scriptsRun(sent), 1);
});

Deno.test("Redis: a lease holder whose publish is answered null hands out its token after a bounded number of commands", async () => {
  let evals = 0;
  // The take answered as Redis does (1: taken), every later script null.
  const { sent, store } = standIn(() => evals++ === 0 ? 1 : null);
  const token = {
    accessToken: "paid-for",
    tokenType: "Bearer" as const,
    expiresIn: 3600,
    expiresAt: 1_900_000_000_000,
    quota: [],
  };
  const got = await store.coordinate!("client", {
    settled: () => false,
    request: () => Promise.resolve({ token }),
    signal: new AbortController().signal,
    requestBudget: 0,
  });
  equal(got.token?.accessToken, token.accessToken);
  // The take, the publish, a set()'s swap over it, the release. Before, the null was taken for a lost lease, and the
  // token stored through update(), twice, then set(): 245 commands.
  ok(scriptsRun(sent) <= 4, `${scriptsRun(sent)} EVALs`);
});

/** The store's clock: 10 s pass at each reading, so that a store that waits on a lease reaches maxWait at once. */
function racingClock() {
  let time = 1_800_000_000_000;
  return () => time += 10_000;
}

// A command function that runs no script answered null (before: the take read as a lease another holds, polled until
// maxWait after a look and a take again), or text (review r9, r10 1: a pipeline or MULTI client's "QUEUED"; "OK"; "")
// read as the lease holder's name, a provider polling until maxWait (2,909 EVALs with "QUEUED"). The take script
// answers 0, 1 or the lease's value (a UUID, a space, the holder's name); any other reply fails at once.
for (
  const [label, reply] of [
    ["null (no script ran)", null],
    ["QUEUED", "QUEUED"],
    ["OK", "OK"],
    ["an empty text", ""],
    ["QUEUED as bytes", new TextEncoder().encode("QUEUED")],
  ] as const
) {
  Deno.test(`Redis: a take answered ${label} fails coordinate() at once, a TypeError naming \`command\`, after one EVAL`, async () => {
    const { sent, store } = standIn(() => reply, racingClock());
    equal(await refusedRequests(store, 0), 0);
    equal(scriptsRun(sent), 1);
  });

  Deno.test(`Redis: a provider over a command function that answers EVAL with ${label} pays one token request after one EVAL`, async () => {
    const api = inProcessFake();
    using _ = api;
    const { sent, store } = standIn(() => reply, racingClock());
    const provider = createTokenProvider({
      ...api.environment,
      ...api.credentials,
      fetch: api.fetch,
      store,
    });
    ok(api.service.isValidToken((await provider.getToken()).accessToken));
    equal(api.service.tokenRequests, 1);
    equal(scriptsRun(sent), 1);
  });
}

// r174b F3: a client that answers every command "QUEUED" (a pipeline's or MULTI's) had its GET of the lease read as
// the holder's name: every caller waited out its budget (150 s), then spent a token each.
Deno.test("Redis: a command function that answers every command QUEUED fails coordinate() at once, a TypeError naming `command`, before any take", async () => {
  const sent: string[] = [];
  const store = createRedisTokenStore({
    command: ([name]) => (sent.push(name!), Promise.resolve("QUEUED")),
  });
  equal(await refusedRequests(store, 60_000), 0);
  equal(scriptsRun(sent), 0);
});

// r174b F1, F2: a blocking connection that answers XREAD at once with nothing made the wait for another's lease a loop
// that never let a timer run: 619,319 commands in 2.5 s, the process frozen up to 150 s. r175b: one that answers in 2 ms
// each time still looked again at network speed (101 XREADs in a second where a poll makes 12).
Deno.test("Redis: a wait for another process's lease over a blocking connection that comes back early with nothing polls as without one", async () => {
  await withFakeTimers(async (timers) => {
    for (const answerIn of [0, 2]) {
      const reads: string[] = [];
      const held = `${crypto.randomUUID()} another-process`;
      const store = createRedisTokenStore({
        command: ([name, key]) => {
          reads.push(name!);
          const lease = name === "GET" && key!.endsWith(":lease");
          return Promise.resolve(lease || name === "EVAL" ? held : null);
        },
        blockingCommand: async () => {
          reads.push("XREAD");
          await new Promise((resolve) => setTimeout(resolve, answerIn));
          return null;
        },
        maxWait: 1000,
        pollInterval: 200,
        now: () => timers.now,
      });
      await drive(
        timers,
        store.coordinate!("client", {
          settled: () => false,
          request: () => Promise.resolve(record),
          signal: new AbortController().signal,
          requestBudget: 0,
        }),
      );
      // A wait each look: 1, 2, 4 … 128 ms, then 200 ms apart: about 12 in the second.
      const waits = reads.filter((name) => name === "XREAD").length;
      ok(waits <= 15, `${waits} XREADs answered in ${answerIn} ms`);
    }
  });
});
