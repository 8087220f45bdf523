// Warns when a token quota bucket runs low; silent while every bucket has 3 or
// more token requests left (a fake started with --per-hour 3 shows a warning).
//
//   deno run --env-file=.env --allow-env='PARTNER_API_*' \
//     --allow-net=<token host> examples/quota_alert.ts

import {
  configFromEnv,
  createTokenProvider,
  nextExhaustedBucket,
  type QuotaSnapshot,
} from "@partner-api/client";

/**
 * Returns an `onQuota` callback that calls `warn` once a bucket has fewer
 * than `threshold` token requests left.
 */
export function quotaAlert(
  threshold: number,
  warn: (message: string) => void,
): (quota: QuotaSnapshot) => void {
  return ({ buckets }) => {
    const low = nextExhaustedBucket(buckets);
    if (low !== undefined && low.remaining < threshold) {
      warn(
        `token quota low: ${low.bucket} has ${low.remaining}/${low.limit} left, resets in ${low.resetAfter} s`,
      );
    }
  };
}

if (import.meta.main) {
  const { environment, ...credentials } = configFromEnv();
  const provider = createTokenProvider({
    ...environment,
    ...credentials,
    onQuota: quotaAlert(3, console.warn),
  });
  await provider.getToken();
}
