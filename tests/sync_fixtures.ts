// What the sync tests share: the CLI's command line of a sync
// (tests/sync_cli_test.ts, tests/process/sync_*), the checkpoint of a
// batch written to a sink directly, without syncList, and the guard's
// reading of a copy against a plain one (every sink kind).

import { deepStrictEqual } from "node:assert/strict";
import type { SyncSink } from "../src/sync/mod.ts";
import {
  type CopyRow,
  keyedReader,
  rowsReader,
} from "../src/sync/_window_guard.ts";
import { isKeyed, keyText } from "../src/sync/_key_text.ts";
import { syncConfig } from "../src/sync/_config.ts";
import { compareKeys } from "../src/sync/_key_order.ts";
import type { SyncKey } from "../src/sync/_window.ts";

/**
 * `partner-api sync <list> --to <target> --no-cache`, then `extra`: a sync
 * that neither reads nor writes the token cache.
 */
export function syncArgs(
  target: string,
  extra: readonly string[] = [],
  list = "transactions",
): string[] {
  return ["sync", list, "--to", target, "--no-cache", ...extra];
}

/** The checkpoint of a direct write to `path` that ends at item `n` (ids "1", "2", ...). */
export function checkpointAt(path: string, n: number) {
  return {
    version: 1 as const,
    path,
    sortBy: null,
    id: null,
    query: {},
    edge: { value: String(n), id: String(n) },
    offset: n,
    full: false,
    complete: true,
  };
}

/** Items whose keys a reading could get wrong: numeric and text ids, sort values of every JSON type, or none. */
export function oddItems(n: number): Record<string, unknown>[] {
  const values = [
    "b",
    3,
    2.5,
    -1,
    1e21,
    5e-324,
    true,
    false,
    null,
    [1],
    { a: 1 },
    "\ud800",
    "é😀",
    "",
    "10",
    10,
    undefined,
  ];
  return Array.from({ length: n }, (_, i) => {
    const v = values[i % values.length];
    const id = i % 3 === 0 ? i : `${i}`;
    return v === undefined ? { n: id } : { n: id, v };
  });
}

/** The guard as a plain reading keys `rows` (each item parsed alone) and sorts their ids: live rows, order, key texts. */
export async function plainGuard(
  rows: readonly CopyRow[],
  keyOf: (item: unknown) => SyncKey,
  descending: boolean,
) {
  const unseen = new Map<string, SyncKey>();
  for (const row of rows.filter((row) => !row.seen)) {
    try {
      unseen.set(row.id, keyOf(row.item));
    } catch { /* left to the cycle's end */ }
  }
  const sign = descending ? -1 : 1;
  const order = [...unseen.keys()].sort((a, b) =>
    sign * compareKeys(unseen.get(a)!, unseen.get(b)!)
  );
  const keys = order.map((id) => keyText(unseen.get(id)!));
  return await Promise.resolve([rows.length, order, keys]);
}

/**
 * Both readings of `sink`'s rows for cycle 1, under each direction, and each order and id reading for a sink that
 * reads rows whole (one that keys its rows keys them once, by the copy's own order: `id` "n").
 */
export async function sameGuards(
  sink: SyncSink<unknown>,
  rows: readonly CopyRow[],
) {
  for (const sortBy of [undefined, "v"]) {
    for (const id of ["n", (item: { n: unknown }) => item.n as string]) {
      if (isKeyed(sink) && (sortBy !== undefined || id !== "n")) continue;
      const order = sortBy === undefined ? {} : { sortBy };
      const { keyOf } = syncConfig("odd", { id, ...order, sink });
      const key = keyOf as (item: unknown) => SyncKey;
      for (const descending of [false, true]) {
        const ask = { cycle: 1, keyOf: key, descending, edge: undefined };
        const copy = isKeyed(sink)
          ? await keyedReader(sink, ask, () => Promise.resolve())
          : await rowsReader(sink.liveRows!(1, key), ask);
        const all = await copy!.unseen(null, null, Infinity);
        const read = [
          copy!.held,
          all.map((row) => row.id),
          all.map((row) => row.key),
        ];
        deepStrictEqual(read, await plainGuard(rows, key, descending));
      }
    }
  }
}
