// Internal: so that "no answer" names the system's reason, not only "fetch failed".

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
