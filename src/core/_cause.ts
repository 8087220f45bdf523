// Internal: so that "no answer" names the system's reason, not only "fetch failed", and a
// permission the runtime refused is told apart from the network.

import { type Secret, serverText } from "./_redact.ts";

/** The causes of a network failure, outermost first, as one line: "fetch failed: connect ECONNREFUSED". */
export function describeCause(
  error: unknown,
  secrets: readonly Secret[],
): string {
  const parts: string[] = [];
  for (let at = error, depth = 0; at !== undefined && depth < 4; depth++) {
    const message = at instanceof Error ? at.message : String(at);
    if (message !== "" && !parts.some((part) => part.includes(message))) {
      parts.push(message);
    }
    at = at instanceof Error ? at.cause : undefined;
  }
  return serverText(parts.join(": ") || "unknown error", secrets);
}

/** Runtimes refuse a request they lack permission for with these; retrying cannot help. */
const PERMISSION_ERRORS = new Set(["NotCapable", "PermissionDenied"]);

/**
 * Whether `error` is the runtime refusing a permission (Deno without `--allow-net` for the host):
 * told by name, so no Deno API is named on other runtimes.
 */
export function isPermissionError(error: unknown): boolean {
  return PERMISSION_ERRORS.has((error as Error | undefined)?.name ?? "");
}
