// Internal: the tool's --verbose, a listener of the module's events: one
// line per token request and API request on standard error, and the cause
// chain of a failure. Events never hold the secret or a token.

import type { Environment } from "../core/environment.ts";
import type { EventListener } from "../core/events.ts";
import type { CliWriter } from "./io.ts";
import { escapeControls } from "./_render.ts";

/** Writes one line per `token.request` and `api.request` event. */
export function verboseListener(
  err: CliWriter,
  environment: Environment,
): EventListener {
  let tokenRequests = 0;
  return (event) => {
    if (event.type === "token.request") {
      tokenRequests++;
      const outcome = event.outcome === "ok" ? "ok" : `error (${event.reason})`;
      write(
        err,
        `POST ${environment.tokenUrl.origin}${environment.tokenUrl.pathname} ${outcome}, ${
          Math.round(event.durationMs)
        } ms, token request ${tokenRequests}`,
      );
    } else if (event.type === "api.request") {
      const base = event.base === "pci"
        ? environment.pciBaseUrl
        : environment.baseUrl;
      write(
        err,
        `${event.method} ${base.origin}${event.path} ${
          event.status || "no answer"
        }, attempt ${event.attempt}, ${Math.round(event.durationMs)} ms`,
      );
    }
  };
}

/** The causes under a failure, one line each, outermost first (at most 8). */
export function causeLines(error: unknown): string[] {
  const lines: string[] = [];
  let cause = error instanceof Error ? error.cause : undefined;
  for (let depth = 0; cause !== undefined && depth < 8; depth++) {
    const line = cause instanceof Error
      ? `${cause.name}: ${cause.message}`
      : String(cause);
    lines.push(`  caused by ${line}`);
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return lines;
}

function write(err: CliWriter, line: string): void {
  err.write(`${escapeControls(line)}\n`);
}
