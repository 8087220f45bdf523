// The command line of a sync in the CLI's tests (tests/sync_cli_test.ts
// and tests/process/sync_*): one place that spells it.

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
