// `partner-api sync`: a SQLite or JSONL copy, brought up to date by each
// run, Ctrl-C committing what it has (exit 130), and its flags checked.

import { DatabaseSync } from "node:sqlite";
import { deepStrictEqual } from "node:assert/strict";
import { startFakePartnerApi } from "../src/testing/mod.ts";
import { plan } from "../src/cli/_plan.ts";
import { idFieldOf, tableOf } from "../src/cli/_sync_plan.ts";
import { confirmArgs, resultLines } from "../src/cli/_sync.ts";
import { isStale } from "../src/sync/_lease.ts";
import { configFor, run } from "./_cli_helpers.ts";
import { CONFIG_VARIABLES } from "../src/core/config.ts";
import { freshTarget } from "./_sync_fake.ts";
import { syncArgs } from "./sync_fixtures.ts";

function equal<T>(actual: T, expected: T, message = "values differ"): void {
  if (actual !== expected) {
    throw new Error(`${message}: ${actual} !== ${expected}`);
  }
}

const fresh = (name: string) => freshTarget("sync-cli", name);

function rows(path: string): number {
  const database = new DatabaseSync(path);
  const row = database.prepare('SELECT count(*) AS n FROM "transactions"')
    .get() as { n: number };
  database.close();
  return row.n;
}

Deno.test("sync into SQLite: a copy, then only what is new; progress on standard error", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 230 } });
  const target = await fresh("copy.db");
  const args = syncArgs(target, ["--limit", "40"]);
  const first = await run(args, configFor(api), {
    stdout: false,
    stderr: true,
  });
  equal(first.code, 0, first.stderr);
  equal(rows(target), 230);
  equal(first.stderr.includes("items/s"), true, first.stderr);
  api.insertTransactions(3);
  const second = await run(args, configFor(api));
  equal(second.code, 0, second.stderr);
  equal(rows(target), 233);
  equal(second.stderr.includes("3 new items"), true, second.stderr);
  // A sweep that finds nothing changed still reads: its rate is not 0.
  const third = await run([...args, "--sweep", "all"], configFor(api));
  equal(third.code, 0, third.stderr);
  equal(/[1-9]\d* items\/s read/.test(third.stderr), true, third.stderr);
});

Deno.test("sync into JSONL by creation date; Ctrl-C commits what it has and exits 130, a rerun completes", async () => {
  await using api = await startFakePartnerApi({
    items: { transactions: 3000 },
  });
  const target = await fresh("copy.jsonl");
  const args = syncArgs(target, ["--sort-by", "creationDate", "--limit", "25"]);
  let stop = () => {};
  let batches = 0;
  let said = "";
  // A terminal: a progress line at each commit (off one, none in the first second), the first of which stops the run.
  const stderr = {
    isTerminal: true,
    write: (text: string) => {
      said += text;
      if (++batches === 1) stop();
    },
  };
  const stopped = await run(args, configFor(api), undefined, {
    onInterrupt: (callback: () => void) => {
      stop = callback;
      return () => {};
    },
    stderr,
  });
  equal(stopped.code, 130);
  equal(
    /committed \d+ items to .*; run the same command again to resume/.test(
      said,
    ),
    true,
    said,
  );
  const again = await run(args, configFor(api));
  equal(again.stderr.includes("resumed"), true, again.stderr);
  equal(again.code, 0, again.stderr);
  const ids = (await Deno.readTextFile(target)).trim().split("\n").map((line) =>
    JSON.parse(line).transactionID
  );
  equal(ids.length, 3000);
  equal(new Set(ids).size, 3000);
});

Deno.test("sync CLI: a run the service stops after batches committed (a 429 without Retry-After once retried; here a 403, never retried) says what the copy kept and that the same command resumes, as Ctrl-C does (it said the service's answer alone: newcomer r258c)", async () => {
  await using api = await startFakePartnerApi({
    items: { transactions: 3000 },
  });
  const target = await fresh("stopped.db");
  const args = syncArgs(target, ["--sort-by", "creationDate", "--limit", "50"]);
  // The third page of the list is refused.
  let pages = 0;
  const fetch = (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.includes("/api/transactions") && ++pages === 3) {
      api.injectApiFaults({ kind: "status", status: 403 });
    }
    return globalThis.fetch(input, init);
  };
  const stopped = await run(args, configFor(api), undefined, { fetch });
  equal(stopped.code, 1, stopped.stderr);
  const kept = rows(target);
  equal(kept > 0 && kept < 3000, true, `${kept} rows`);
  const said = stopped.stderr.trim().split("\n").at(-1)!;
  equal(said.includes(" answered 403"), true, said);
  equal(
    said.includes(
      `; committed ${kept} items to ${target} before it: run the same command again to resume`,
    ),
    true,
    said,
  );
  const again = await run(args, configFor(api));
  equal(again.code, 0, again.stderr);
  equal(rows(target), 3000);
});

Deno.test("sync's flags are checked before anything is read", () => {
  // Each flag of a copy to a.db, with the values it refuses.
  const refused: Record<string, string[]> = {
    "--limit": ["0"],
    "--format": ["json"],
    "--sweep": ["-1", "some"],
    "--deletes": ["hide"],
    "--max-deletes": ["2", "0x1", "1e0", " 0.5"],
    "--sort-direction": ["up"],
    "--priority": ["urgent"],
    "--max-duration": ["10", "9999999h"],
  };
  const toDb = ["sync", "transactions", "--to", "a.db"];
  for (
    const args of [
      ["sync"],
      ["sync", "transactions"],
      ["sync", "transactions", "--to", "copy.csv"],
      [...toDb, "extra"],
      [...toDb, "--full"],
      ["sync", "transactions", "--to", "a.jsonl", "--deletes", "mark"],
      ...Object.entries(refused).flatMap(([flag, values]) =>
        values.map((value) => [...toDb, flag, value])
      ),
    ]
  ) {
    let name = "";
    try {
      plan(args);
    } catch (error) {
      name = (error as Error).constructor.name;
    }
    equal(name, "UsageError", args.join(" "));
  }
  const planned = plan([
    "sync",
    "cardholders",
    "--to",
    "c.db",
    "--sweep",
    "all",
    "--deletes",
    "mark",
    "--max-deletes",
    "0.5",
    "--changes",
    "--sort-direction",
    "desc",
    "--priority",
    "high",
    "--max-duration",
    "10m",
  ]);
  equal(planned.command === "sync" && planned.sync.kind, "sqlite");
  if (planned.command === "sync") {
    const { sweep, deletes, maxDeletes, changes, sortDirection } = planned.sync;
    equal(
      JSON.stringify([sweep, deletes, maxDeletes, changes, sortDirection]),
      JSON.stringify([null, "mark", 0.5, true, "DESC"]), // Infinity is null in JSON
    );
    equal(planned.sync.priority, "high");
    equal(planned.sync.maxDuration, 600_000);
  }
  equal(idFieldOf("transactions"), "transactionID");
  equal(idFieldOf("companies"), "companyID");
  equal(tableOf("v2/card-holders"), "card_holders");
  equal(tableOf("2fa"), "t_2fa");
  equal(isStale(0, 5_001), true);
  equal(isStale(0, 4_000), false);
});

Deno.test("sync CLI: 'next verified by' is said of a sweep at the spare rate (--max-duration), not of one of --sweep N requests a run", () => {
  const sync = (extra: string[]) => {
    const planned = plan(["sync", "things", "--to", "t.db", ...extra]);
    if (planned.command !== "sync") throw new Error(planned.command);
    return planned.sync;
  };
  const now = Date.UTC(2026, 10, 29);
  const result = {
    written: 0,
    read: 1000,
    pages: 1,
    requests: 2,
    resumed: false,
    inserted: 0,
    updated: 0,
    deleted: 0,
    behind: 0,
    verifiedAt: now,
    sweepLeft: 9,
    skipped: 0,
    skippedIds: [],
    nextVerifiedAt: now + 9_000,
  };
  const says = (extra: string[]) =>
    resultLines(sync(extra), result, 1, now).includes("next verified by");
  equal(says(["--max-duration", "10m"]), true);
  equal(says(["--sweep", "2"]), false);
  equal(says([]), false);
  // --sweep all whose cycle is still under way (the list's end moved as it was read) says so, never "verifies it now".
  const all = (sweepLeft: number) =>
    resultLines(sync(["--sweep", "all"]), { ...result, sweepLeft }, 1, now);
  equal(all(1).includes("--sweep all did not complete its cycle"), true);
  equal(all(0).includes("did not complete"), false);
  // With --max-duration the time stopped it, and the next run goes on with that cycle (r165a F1).
  const timed = sync(["--sweep", "all", "--max-duration", "10m"]);
  const stopped = resultLines(timed, { ...result, sweepLeft: 1 }, 1, now);
  equal(stopped.includes("stopped by --max-duration"), true);
  // Items known missing: runs are counted only of a sweep of --sweep N requests (10 by default).
  const behind = (extra: string[]) =>
    resultLines(sync(extra), { ...result, behind: 3 }, 1, now);
  const lines = [["--max-duration", "10m"], [], ["--sweep", "0"]].map(behind);
  equal(lines[0]!.includes("as --max-duration lets it"), true, lines[0]);
  equal(lines[1]!.includes("within about 1 more run"), true, lines[1]);
  // Those runs are the cycle's rest: where it has passed, the next brings them (it promised 2 runs, and took 9: r103 F1).
  equal(
    lines[1]!.includes("ahead of its place, else in the cycle after"),
    true,
  );
  equal(lines[2]!.includes("the sweep is off"), true, lines[2]);
});

Deno.test("sync CLI: a --to in a missing folder or naming a folder, a copy it did not make, a file it may not write: exit 2 and one line about --to", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 5 } });
  const folders = [await fresh("folder.db"), await fresh("folder.jsonl")];
  for (const folder of folders) await Deno.mkdir(folder);
  for (const to of [".test-tmp/no/such/folder/copy.db", ...folders]) {
    const refused = await run(syncArgs(to), configFor(api));
    equal(refused.code, 2, refused.stderr);
    equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
    equal(refused.stderr.includes(`: --to ${to}: `), true, refused.stderr);
  }
  equal(api.apiRequests, 0, "refused before any list request");
  // Files of the user's: lines of their own, and notes that are no database (it exited 1, to be retried).
  const notes = "my notes, not a database\n".repeat(200);
  // And a database whose table of that name is the user's: no flag names a table.
  const table = (path: string) => {
    const database = new DatabaseSync(path);
    database.exec("CREATE TABLE transactions (a, b)");
    database.close();
  };
  const files: [string, (path: string) => Promise<void> | void][] = [
    ["own.jsonl", (path) => Deno.writeTextFile(path, '{"mine":1}\n')],
    ["own:colon.jsonl", (path) => Deno.writeTextFile(path, '{"mine":1}\n')],
    ["notes.db", (path) => Deno.writeTextFile(path, notes)],
    ["mine.db", table],
  ];
  for (const [name, make] of files) {
    const own = await fresh(name);
    await make(own);
    const before = await Deno.readFile(own);
    const foreign = await run(syncArgs(own), configFor(api));
    equal(foreign.code, 2, foreign.stderr);
    equal(foreign.stderr.includes(`: --to ${own}: `), true, foreign.stderr);
    equal(/sink|table|Cannot sync/.test(foreign.stderr), false, foreign.stderr);
    deepStrictEqual(await Deno.readFile(own), before);
  }
  const other = await fresh("other.db");
  equal(
    (await run(
      syncArgs(other, ["--id", "organizationID"], "organizations"),
      configFor(api),
    )).code,
    0,
  );
  const mixed = await run(
    syncArgs(other),
    configFor(api),
  );
  equal(mixed.code, 0, mixed.stderr); // another table in the same file
  const sorted = await run(
    syncArgs(other, ["--sort-by", "creationDate"]),
    configFor(api),
  );
  equal(sorted.code, 2, sorted.stderr);
  equal(sorted.stderr.includes("give --to another file"), true, sorted.stderr);
  equal(/sink|table/.test(sorted.stderr), false, sorted.stderr);
});

// The resource sanitizer fails it when the progress line's timer outlives the run (main never returned to exit).
Deno.test("sync CLI: a copy the sink refuses (a table it may not name) leaves no timer running", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 5 } });
  const target = await fresh("refused.db");
  const args = syncArgs(target, ["--id", "id"], "partner_api_sync");
  equal((await run(args, configFor(api))).code, 2);
  equal(api.apiRequests, 0, "refused before any list request");
});

Deno.test("the sync example keeps a SQLite copy current", async () => {
  const { syncTransactions } = await import("../examples/sync_transactions.ts");
  const { createClient } = await import("../src/client/mod.ts");
  await using api = await startFakePartnerApi({ items: { transactions: 40 } });
  const client = createClient({
    environment: api.environment,
    ...api.credentials,
  });
  const target = await fresh("example.db");
  equal((await syncTransactions(client, target)).written, 40);
  api.insertTransactions(2);
  const second = await syncTransactions(client, target);
  equal(second.written, 2);
  equal(second.items, 42);
  const { freshnessBound } = await import("../examples/sync_transactions.ts");
  // 100,000 items, windows of 1,000, 10 a run, a run a minute: a cycle of
  // 102 requests at most is 11 runs, so 22 minutes.
  equal(freshnessBound(100_000), 22);
  equal(rows(target), 42);
});

Deno.test("the sync lock: taken and released, a live one waited for (until aborted), a stale one taken over, and the old holder loses it", async () => {
  const { takeFileLock } = await import("../src/sync/_file_lock.ts");
  const path = `${await fresh("lock.db")}.lock`;
  const held = await takeFileLock(path, { wait: Infinity });
  equal(JSON.parse(await Deno.readTextFile(path)).pid, Deno.pid);
  const waiting = new AbortController();
  const heard: string[] = [];
  const second = takeFileLock(path, {
    wait: Infinity,
    signal: waiting.signal,
    onWait: (holder) => {
      heard.push(holder);
      waiting.abort(new Error("gave up"));
    },
  });
  let reason = "";
  await second.catch((error) => reason = error.message);
  equal(reason, "gave up");
  equal(heard[0], `pid ${Deno.pid}`);
  // The holder pauses past STALE_AFTER (its mtime stands still): taken over.
  const past = new Date(Date.now() - 60_000);
  await Deno.utime(path, past, past);
  const taker = await takeFileLock(path, {
    wait: 0,
    onWait: () => {
      throw new Error("a stale lock is not waited for");
    },
  });
  let lost = "";
  await held.assertHeld().catch((error) => lost = error.reason);
  equal(lost, "lock-lost");
  await held[Symbol.asyncDispose](); // removes only its own lock
  equal(await Deno.stat(path).then(() => true, () => false), true);
  await taker[Symbol.asyncDispose]();
  equal(await Deno.stat(path).then(() => true, () => false), false);
});

Deno.test("sync CLI: an item added behind the copy's end is reported known missing, and --sweep all brings it in with what changed and was removed", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 60 } });
  const target = await fresh("sweep.db");
  const args = syncArgs(target, ["--sort-by", "creationDate"]);
  equal((await run(args, configFor(api))).code, 0);
  api.insert("transactions", {
    transactionID: "tx_back",
    creationDate: "2000-01-01T00:00:00.000Z",
  });
  const head = await run([...args, "--sweep", "0"], configFor(api));
  equal(head.code, 0, head.stderr);
  equal(
    head.stderr.includes("1 item is known to be missing"),
    true,
    head.stderr,
  );
  equal(head.stderr.includes("NaN"), false, head.stderr);
  api.update("transactions", "tx_000010", { amount: 1 });
  api.remove("transactions", "tx_000011");
  const swept = await run(
    [...args, "--sweep", "all", "--max-deletes", "0.5"],
    configFor(api),
  );
  equal(swept.code, 0, swept.stderr);
  equal(
    swept.stderr.includes("1 new item, 1 changed, 1 removed"),
    true,
    swept.stderr,
  );
  equal(rows(target), 60);
});

Deno.test("sync CLI: --changes with a JSONL copy exits 2 in one line, before any request (issue 45)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 5 } });
  const target = await fresh("changes.jsonl");
  const result = await run(syncArgs(target, ["--changes"]), configFor(api));
  equal(result.code, 2, result.stderr);
  equal(result.stderr.trim().split("\n").length, 1, result.stderr);
  equal(result.stderr.includes("SQLite"), true, result.stderr);
  equal(api.apiRequests, 0);
});

Deno.test("sync CLI: a mass delete the guard holds back exits 1 naming the command that confirms it, and that command goes through (issue 45)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 40 } });
  const target = await fresh("mass.db");
  const args = syncArgs(target, ["--sort-by", "creationDate"]);
  equal((await run(args, configFor(api))).code, 0);
  for (let i = 1; i <= 14; i++) {
    api.remove("transactions", `tx_${String(i).padStart(6, "0")}`);
  }
  const held = await run(
    [...args, "--sweep", "all", "--max-deletes", "0.2"],
    configFor(api),
  );
  equal(held.code, 1, held.stderr);
  equal(rows(target), 40, "nothing removed");
  const line = held.stderr.trim().split("\n").at(-1)!;
  const command = line.slice(line.indexOf("confirm with: ") + 14).split(" ");
  equal(command.slice(0, 3).join(" "), "partner-api sync transactions", line);
  equal(command.filter((arg) => arg === "--max-deletes").length, 1, line);
  const confirmed = await run(command.slice(1), configFor(api));
  equal(confirmed.code, 0, confirmed.stderr);
  equal(rows(target), 26);
});

Deno.test("sync CLI: a sweep the guard refuses says on its progress line what it read (it said 0 items read), and still names the command that confirms", async () => {
  await using api = await startFakePartnerApi({
    items: { organizations: 300 },
  });
  const target = await fresh("read.db");
  const args = syncArgs(target, [], "organizations");
  equal((await run(args, configFor(api))).code, 0);
  for (let i = 1; i <= 150; i++) {
    api.remove("organizations", `org_${String(i).padStart(6, "0")}`);
  }
  // A clock a second on at each look: off a terminal, every update is a line.
  let at = Date.now();
  const now = { now: () => at += 1000 };
  const held = await run([...args, "--sweep", "all"], configFor(api), {
    stdout: false,
    stderr: false,
  }, now);
  equal(held.code, 1, held.stderr);
  const lines = held.stderr.trim().split("\n");
  const read = lines.filter((line) => / items? read /.test(line)).at(-1);
  equal(
    read?.startsWith("150 items read (0 new, 0 changed, 0 removed)"),
    true,
    held.stderr,
  );
  equal(
    lines.at(-1)!.includes("confirm with: partner-api sync organizations"),
    true,
    held.stderr,
  );
});

Deno.test("sync CLI: a first run that fails with nothing committed leaves the new file to the run of another list that opened it meanwhile: that run, still reading, keeps its copy (a cleanup that removed the unused file took it from under it)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 5 } });
  const target = await fresh("shared.db");
  // Each run's list request is held until released: the failing one's answered 404, the other's by the fake.
  const held = () => {
    let arrived = () => {}, release = () => {};
    const arrival = new Promise<void>((resolve) => arrived = resolve);
    const released = new Promise<void>((resolve) => release = resolve);
    return { arrived, arrival, release, released };
  };
  const [failing, other] = [held(), held()];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const which = url.pathname.endsWith("/organizations") ? failing : other;
      which.arrived();
      await which.released;
      if (which === failing) {
        return Response.json({ error: "not_found" }, { status: 404 });
      }
      const to = new URL(url.pathname + url.search, api.environment.baseUrl);
      return await fetch(to, { headers: request.headers });
    },
  );
  const base = new URL(api.environment.baseUrl.pathname, "http://127.0.0.1");
  base.port = String(server.addr.port);
  const env = { ...configFor(api), [CONFIG_VARIABLES.baseUrl]: base.href };
  const failed = run(syncArgs(target, [], "organizations"), env);
  await failing.arrival; // it made the file, its tables and its lease
  const reading = run(syncArgs(target), env);
  await other.arrival; // it opened the file and took its own lease
  failing.release();
  equal((await failed).code, 1);
  other.release();
  const done = await reading;
  equal(done.code, 0, done.stderr);
  equal(rows(target), 5, "the other run's copy stays");
});

Deno.test("sync CLI: with nothing known missing, a copy not verified whole within a day says when it last was (issue 45)", async () => {
  await using api = await startFakePartnerApi({ items: { transactions: 30 } });
  const target = await fresh("checked.db");
  const args = syncArgs(target, ["--sweep", "all"]);
  const day = 86_400_000;
  let at = Date.now();
  const now = { now: () => at };
  const first = await run(args, configFor(api), undefined, now);
  equal(first.code, 0, first.stderr);
  equal(first.stderr.includes("verified"), false, first.stderr);
  at += 2 * day;
  const later = await run(
    syncArgs(target, ["--sweep", "0"]),
    configFor(api),
    undefined,
    now,
  );
  equal(later.code, 0, later.stderr);
  equal(later.stderr.includes("last verified whole"), true, later.stderr);
  equal(later.stderr.includes("(48 h ago)"), true, later.stderr);
});

Deno.test("the confirming command is the same command line with one --max-deletes, quoted for a shell", () => {
  equal(
    confirmArgs(["sync", "t", "--to", "my copy.db", "--max-deletes=0.2"], 0.35),
    "sync t --to 'my copy.db' --sweep all --max-deletes 0.35",
  );
  equal(
    confirmArgs(["sync", "t", "--max-deletes", "0.2", "--to", "it's.db"], 1),
    "sync t --to 'it'\\''s.db' --sweep all --max-deletes 1",
  );
});
