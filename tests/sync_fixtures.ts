// What the sync tests share: the CLI's command line of a sync
// (tests/sync_cli_test.ts, tests/process/sync_*), and the checkpoint of a
// batch written to a sink directly, without syncList.

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
