import { PartnerApiError } from "../core/errors.ts";
import { handedBy, redactInPlace, secretsOf } from "../core/_redact.ts";
import { withoutSecretEcho, withoutSecrets } from "../core/_option_secrets.ts";
import type { SyncProgress } from "./sync_options.ts";

/**
 * Why a list cannot be copied:
 *
 * - `"missing-id"`: an item has no id (neither a non-empty string nor a finite number);
 * - `"unordered"`: items came out of the asked order, or without the sort field, or pages that do not join (a sweep's
 *   first page that skipped the list's first item: stale or shifted);
 * - `"sink-mismatch"`: the copy is not the one its checkpoint describes; nothing was changed;
 * - `"locked"`: another run held the copy for longer than the sink waits;
 * - `"lock-lost"`: another run took the copy over; this run stopped before writing;
 * - `"link"`: a file of the copy is a link or was swapped; the message says whose and what to remove;
 * - `"file"`: a file of the copy cannot be created, read or written (`path`, `cause`);
 * - `"repeated-page"`: windows at different pages answered the same items (the service ignores `page`);
 * - `"too-many-deletes"`: a sweep cycle would remove more than `maxDeletes` allows; it committed nothing.
 *
 * @example Telling a wrong `id` apart
 * ```ts
 * import { createClient } from "@partner-api/client";
 * import { createSqliteSink, type SyncError, type SyncErrorReason, syncList } from "@partner-api/client/sync";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { rejects } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ items: { organizations: 3 } });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * using sink = createSqliteSink(":memory:", { table: "organizations" });
 * const id = (organization: { id?: string }) => organization.id!; // the field is organizationID
 * const expected: SyncErrorReason = "missing-id";
 * await rejects(syncList(client, "organizations", { id, sink }), (error: SyncError) => error.reason === expected);
 * ```
 */
export type SyncErrorReason =
  | "missing-id"
  | "unordered"
  | "sink-mismatch"
  | "locked"
  | "lock-lost"
  | "link"
  | "file"
  | "repeated-page"
  | "too-many-deletes";

/**
 * A sync stopped because of the list or the copy: nothing past the last good batch was written, nor its checkpoint.
 *
 * @example Reading the reason
 * ```ts
 * import { SyncError } from "@partner-api/client/sync";
 * import { equal, ok } from "node:assert/strict";
 *
 * const error = new SyncError("no id", "missing-id");
 * equal(error.reason, "missing-id");
 * equal(error.name, "SyncError");
 * ok(error instanceof Error);
 * ```
 */
export class SyncError extends PartnerApiError {
  /** Why the list cannot be copied. */
  declare readonly reason: SyncErrorReason;
  /** The file or table concerned, where there is one. */
  readonly path?: string;
  /** `"too-many-deletes"`: the `maxDeletes` that confirms the refused cycle's deletes. */
  readonly maxDeletesNeeded?: number;
  /**
   * What the run had read and committed when it stopped (a refused sweep: the new items its head committed); undefined
   * for a refusal before the copy was read.
   */
  readonly progress?: SyncProgress;

  /** Creates the error; `message` says what is wrong, and where. */
  constructor(
    message: string,
    reason: SyncErrorReason,
    path?: string,
    options: ErrorOptions = {},
  ) {
    super(message, reason, options);
    this.name = "SyncError";
    if (path !== undefined) this.path = path;
  }
}

/** The refusal (`"sink-mismatch"`) of the copy at `where`, which is not what its record says; `instead`: what to do. */
export function sinkMismatch(where: string, why: string, instead: string) {
  const message =
    `Cannot sync into ${where}: ${why}. Nothing was changed: ${instead}`;
  return new SyncError(message, "sink-mismatch", where);
}

/**
 * Keeps `client`'s secrets out of what a run shows (`hide`: an error, in place, or an id) until `stop`: an option's echo
 * of the client secret as `[client_secret]`; the credentials, the tokens the run sent and the last two the provider
 * handed out by name; a text that still holds a run of the secret or of a token sent is dropped whole.
 */
export function secretsHidden(client: object) {
  const run = secretsOf(client);
  const { tokenProvider } = client as { tokenProvider?: unknown };
  const hide = <E>(shown: E): E => {
    const secrets = run.secrets();
    const secret = secrets.find((s) => typeof s === "object")?.secret;
    const echo = Object.hasOwn(Object(shown), "option")
      ? withoutSecretEcho(shown, secret)
      : shown;
    const handed = handedBy(Object(tokenProvider));
    const named = withoutSecrets(echo, [...handed, ...secrets]);
    return redactInPlace(named, run.clean) as E;
  };
  return { hide, stop: run.stop };
}
