// Shared by the sync tests: the fake served in process (no sockets), a
// client over it that counts list requests, and an in-memory sink that
// commits like the real ones and counts every write of every id.

import {
  createClient,
  type PartnerClient,
  type RateLimiter,
} from "../src/client/mod.ts";
import {
  createFakePartnerService,
  type FakePartnerService,
  type FakePartnerServiceOptions,
} from "../src/testing/mod.ts";
import {
  type SyncCheckpoint,
  SyncError,
  syncList,
  type SyncResult,
  type SyncSink,
} from "../src/sync/mod.ts";
import { seededRandom } from "../src/testing/_list_data.ts";
import fc from "fast-check";

/** A fake in process and a client over it. */
export interface InProcess {
  readonly service: FakePartnerService;
  readonly client: PartnerClient;
  /** List requests so far. */
  readonly listRequests: number;
  /**
   * Runs before each list request is answered (the test's schedule); a
   * promise it returns holds the answer until it settles.
   */
  beforeList: ((request: number) => void | Promise<void>) | undefined;
  /** Changes the items answered to list request `n` (a fault the test plants). */
  afterList:
    | ((
      items: readonly Record<string, unknown>[],
      request: number,
    ) => unknown[])
    | undefined;
}

/**
 * The fake in process, with a client that neither retries nor paces; a list
 * request for fewer than `least` items gets a 400 (a least page size).
 */
export function inProcess(
  options: FakePartnerServiceOptions = {},
  { least = 0 }: { least?: number } = {},
): InProcess {
  const service = createFakePartnerService({
    quota: { perHour: 1_000_000, perDay: 1_000_000 },
    ...options,
  });
  const main = "http://127.0.0.1:9";
  const environment = service.environmentAt(main, "http://127.0.0.1:10");
  let listRequests = 0;
  const state: InProcess = {
    service,
    client: undefined as unknown as PartnerClient,
    get listRequests() {
      return listRequests;
    },
    beforeList: undefined,
    afterList: undefined,
  };
  const serve: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname.startsWith("/api/")) {
      listRequests++;
      await state.beforeList?.(listRequests);
      if (Number(url.searchParams.get("limit") ?? least) < least) {
        return Response.json({ error: "limit" }, { status: 400 });
      }
      const answer = await service.handle(request);
      const change = state.afterList;
      if (change === undefined || !answer.ok) return answer;
      // The items: the body, or its one array (the fake's envelope).
      const body = await answer.json();
      if (Array.isArray(body)) return Response.json(change(body, listRequests));
      const [key, items] = Object.entries(body).find(([, v]) =>
        Array.isArray(v)
      )!;
      return Response.json({
        ...body,
        [key]: change(items as Record<string, unknown>[], listRequests),
      });
    }
    return await service.handle(request);
  };
  Object.assign(state, {
    client: createClient({
      environment,
      ...service.credentials,
      fetch: serve,
      retry: false,
      rateLimit: false,
    }),
  });
  return state;
}

/** An in-memory sink: items by id with a count of writes, and the checkpoint. */
export interface MemorySink<T> extends SyncSink<T> {
  readonly rows: Map<string, T>;
  /** How many times each id was written new or changed (a sweep's unchanged reads are not writes). */
  readonly writes: Map<string, number>;
  readonly checkpoint: SyncCheckpoint | undefined;
  /** Makes the write numbered `n` (from 1) fail before it commits. */
  failAt: number | undefined;
}

/**
 * Creates a {@linkcode MemorySink}: it follows the sweep like the SQL sinks
 * (rows seen per cycle, unseen ones removed when a cycle ends, guarded by
 * maxDeletes) and reports what it inserted, changed and removed.
 */
export function memorySink<T>(): MemorySink<T> {
  let saved: SyncCheckpoint | undefined;
  let count = 0;
  const seen = new Map<string, number>();
  const staged = new Map<string, { cycle: number; item: T }>();
  const sink: MemorySink<T> = {
    rows: new Map(),
    writes: new Map(),
    get checkpoint() {
      return saved;
    },
    failAt: undefined,
    load: () => Promise.resolve(structuredClone(saved)),
    // Its rows, and whether the cycle saw each: the guard and a spread cycle's end read them as the real sinks'.
    async *liveRows(cycle) {
      for (const [id, item] of sink.rows) {
        yield { id, item, seen: seen.get(id) === cycle };
      }
    },
    write(items, checkpoint, ids, context) {
      if (++count === sink.failAt) {
        return Promise.reject(new Error("the sink failed"));
      }
      const cycle = context?.cycle ?? 0;
      const ends = context?.endsCycle;
      const batch = new Set([...ids, ...context?.kept ?? []]);
      const gone = ends === undefined ? [] : [...sink.rows.keys()].filter(
        (id) => !batch.has(id) && (seen.get(id) ?? 0) < cycle,
      );
      const held = sink.rows.size;
      const { deleted: before = 0, largest = 0 } = ends?.recent ?? {};
      if (
        ends !== undefined && ends.maxDeletes < 1 &&
        gone.length > ends.maxDeletes * Math.max(held, largest) - before
      ) {
        return Promise.reject(new SyncError("too many", "too-many-deletes"));
      }
      // A sweep's new items wait for the cycle to pass its guard.
      const stages = context?.phase === "sweep" && ends === undefined;
      let inserted = 0, updated = 0;
      const put = (id: string, item: T) => {
        const was = sink.rows.get(id);
        if (was !== undefined && JSON.stringify(was) === JSON.stringify(item)) {
          return;
        }
        if (was === undefined) inserted++;
        else updated++;
        sink.rows.set(id, structuredClone(item));
        sink.writes.set(id, (sink.writes.get(id) ?? 0) + 1);
      };
      items.forEach((item, i) => {
        const id = ids[i]!;
        seen.set(id, cycle);
        if (stages && !sink.rows.has(id)) staged.set(id, { cycle, item });
        else put(id, item);
      });
      if (ends !== undefined) {
        for (const [id, { cycle: at, item }] of staged) {
          if (at === cycle && !sink.rows.has(id)) put(id, item);
        }
        staged.clear();
      }
      for (const id of gone) sink.rows.delete(id);
      const deleted = gone.length;
      saved = structuredClone(checkpoint);
      return Promise.resolve({
        inserted,
        updated,
        deleted,
        ...(ends === undefined ? {} : { held }),
      });
    },
  };
  return sink;
}

/**
 * A path `name` under `.test-tmp/<folder>`, with no copy there yet: the file
 * and the files a sink or the CLI keeps beside it are removed.
 */
export async function freshTarget(
  folder: string,
  name: string,
): Promise<string> {
  const dir = `.test-tmp/${folder}`;
  await Deno.mkdir(dir, { recursive: true });
  const path = `${dir}/${name}`;
  for (const suffix of ["", ".checkpoint.json", "-wal", "-shm", ".lock"]) {
    await Deno.remove(`${path}${suffix}`).catch(() => {});
  }
  return path;
}

/**
 * A client whose list `things` is `items` as they stand, paged by `limit`
 * and `page` like the service (or every page answered as page 1, as a
 * service that ignores `page`); the token comes from the fake in process.
 */
export function listOf(
  items: () => readonly unknown[],
  options: {
    ignorePage?: boolean;
    /** The largest page the service answers: longer ones are cut to it, and placed by its size. */
    maxLimit?: number | (() => number);
    /** Changes the page answered to request `n` (from 1), e.g. cuts it. */
    answer?: (page: readonly unknown[], n: number) => readonly unknown[];
    /** The largest `limit` answered now; a larger one gets a 400. */
    refuseAbove?: () => number;
    /** The smallest `limit` answered; a smaller one gets a 400. */
    refuseBelow?: number;
    /** The client's limiter (none by default). */
    rateLimit?: RateLimiter;
    /** Called as each request arrives, before the list is read. */
    before?: (asked: { limit: number; page: number }) => void;
    /** The status a request gets instead of its page, if any. */
    status?: (asked: { limit: number; page: number }) => number | undefined;
  } = {},
): { client: PartnerClient; readonly requests: number } {
  const fake = inProcess();
  let requests = 0;
  const serve: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname !== "/api/things") return fake.service.handle(request);
    requests++;
    const limit = Math.min(
      Number(url.searchParams.get("limit") ?? 50),
      typeof options.maxLimit === "function"
        ? options.maxLimit()
        : options.maxLimit ?? Infinity,
    );
    if (
      limit > (options.refuseAbove?.() ?? Infinity) ||
      limit < (options.refuseBelow ?? 0)
    ) {
      return Promise.resolve(
        Response.json({ error: "limit" }, { status: 400 }),
      );
    }
    const page = options.ignorePage ? 1 : Number(url.searchParams.get("page"));
    options.before?.({ limit, page });
    const status = options.status?.({ limit, page });
    if (status !== undefined) {
      return Promise.resolve(Response.json({ error: "no" }, { status }));
    }
    const all = items();
    const body = all.slice((page - 1) * limit, page * limit);
    return Promise.resolve(
      Response.json(options.answer?.(body, requests) ?? body),
    );
  };
  const environment = fake.service.environmentAt(
    "http://127.0.0.1:9",
    "http://127.0.0.1:10",
  );
  const client = createClient({
    environment,
    ...fake.service.credentials,
    fetch: serve,
    retry: false,
    rateLimit: options.rateLimit ?? false,
  });
  return {
    client,
    get requests() {
      return requests;
    },
  };
}

/** An item of a list of things (`listOf`'s tests): its id, and a field to change. */
export type Thing = { thingID: string; v?: number };

/**
 * `n` things with ids spread out (`step` apart, `suffix` after), so that
 * inserts can land between them and another list can interleave them.
 */
export function things(
  n: number,
  { step = 1000, suffix = "" }: { step?: number; suffix?: string } = {},
): Thing[] {
  return Array.from(
    { length: n },
    (_, i) => ({ thingID: `t${String(i * step).padStart(9, "0")}${suffix}` }),
  );
}

/**
 * r167a's spread cycle into `sink`: 300 things at random ids (`seed`), 50 a window, `sweep` windows a run, newest first
 * unless `ascending`; 600 more at random ids (`spread`: through the list's range; else at its far end) come before the
 * fourth of 30 runs, and every other run the sweep's last item read is deleted first. A run that fails rejects.
 */
export async function edgeGoneAmidInserts(
  sink: SyncSink<Thing>,
  { seed = 7, sweep = 3, ascending = false, spread = false } = {},
) {
  const random = seededRandom(seed);
  const ids = (count: number, digits: number, tail = "") =>
    Array.from({ length: count }, () => ({
      thingID: `t${
        String(Math.floor(random() * 10 ** digits)).padStart(9, "0")
      }${tail}`,
    }));
  let list: Thing[] = ids(300, 9);
  const sign = ascending ? 1 : -1;
  const sorted = () =>
    [...list].sort((a, b) => a.thingID < b.thingID ? -sign : sign);
  const service = listOf(sorted, { maxLimit: 50 });
  const sortDirection = ascending ? "ASC" as const : "DESC" as const;
  const options = { id: "thingID", sink, limit: 50, sweep, sortDirection };
  await syncList(service.client, "things", options);
  for (let run = 0; run < 30; run++) {
    if (run === 3) list = [...list, ...ids(600, spread ? 9 : 6, "x")];
    const edge = (await sink.load())?.sweep?.edge?.id;
    if (run % 2 === 0) list = list.filter((item) => item.thingID !== edge);
    await syncList(service.client, "things", options);
  }
}

/** A run's inserted, updated and deleted counts, to compare in one assertion. */
export function counts(result: SyncResult): [number, number, number] {
  return [result.inserted, result.updated, result.deleted];
}

/**
 * Checks `run` on the schedules fast-check draws (`options`: `numRuns`,
 * `seed`), then that they reached every one of `kinds`: `run` notes what it
 * reached in `reached`.
 */
export async function checkSchedules<S>(
  schedules: fc.Arbitrary<S>,
  run: (schedule: S) => Promise<void>,
  options: { numRuns: number; seed: number; examples?: [S][] },
  kinds: readonly string[],
  reached: ReadonlySet<string>,
): Promise<void> {
  await fc.assert(fc.asyncProperty(schedules, run), options);
  const missed = kinds.filter((kind) => !reached.has(kind));
  if (missed.length > 0) throw new Error(`never reached: ${missed.join(", ")}`);
}

/**
 * `sink` aborting `controller` the moment the engine hands it a batch of items (after the engine's own check): the
 * abort comes while the sink prepares that batch, as a Ctrl-C between the hand-over and the statement would.
 */
export function abortingOnWrite<S extends SyncSink<never>>(
  sink: S,
  controller: AbortController,
): S {
  return new Proxy(sink, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key !== "write") return value.bind(target);
      return (...batch: Parameters<S["write"]>) => {
        const written = value.apply(target, batch);
        if (batch[0].length > 0) controller.abort();
        return written;
      };
    },
  });
}
