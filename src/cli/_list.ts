// Internal: `list`: items as they come, progress on a terminal; on Ctrl-C the output stays whole (a JSON array closed), 130.

import type { Session } from "./_session.ts";
import { itemWriter } from "./_output.ts";
import { fieldNames, type ListRequest } from "./_list_plan.ts";
import { UsageError } from "./_flag_values.ts";
import { nearest } from "../core/_nearest.ts";
import { fieldsOf } from "../core/_check.ts";
import { progressReporter } from "./_render.ts";

/** Ctrl-C (or SIGTERM, SIGHUP) stopped the run: exit code 128 + the signal's number (130), as shells expect. */
export class Interrupted extends Error {
  override readonly name = "Interrupted";
  constructor(message: string, readonly exitCode = 130) {
    super(message);
  }
}

/** A signal that Ctrl-C (or SIGTERM, SIGHUP) aborts with {@linkcode Interrupted}, heard until `stop`. */
export function onCtrlC(io: Session["io"]) {
  const interrupt = new AbortController();
  const abort = (exitCode?: number) =>
    interrupt.abort(new Interrupted("interrupted", exitCode));
  return { signal: interrupt.signal, stop: io.onInterrupt?.(abort) };
}

/** The refusal of the first of `fields` no item of the first page has, with the nearest key. */
function fieldsRefusal(fields: readonly string[], page: readonly unknown[]) {
  const keys = new Set(
    page.flatMap((item) => Object.keys(fieldsOf(item) ?? {})),
  );
  const unknown = fields.find((field) => !keys.has(field));
  if (unknown === undefined) return undefined;
  const pickable = [...keys].filter((key) => fieldNames(key)[0] === key); // what --fields can give
  const near = nearest(unknown, pickable);
  const hint = near ? `; did you mean ${near}?` : "";
  return new UsageError(
    `--fields: no item of the first page has '${unknown}'${hint}`,
  );
}

/** Writes every item of the list. */
export async function runList(
  session: Session,
  request: ListRequest,
  forceProgress = false,
): Promise<void> {
  const { io } = session;
  const format = request.format ?? (io.stdout.isTerminal ? "table" : "jsonl");
  const writer = itemWriter(io.stdout, format, {
    fields: request.fields,
    notify: (line) => io.stderr.write(`${line}\n`),
    shown: session.shown,
  });
  // JSON on a terminal: no progress line may land inside the array, so the count is said once, after it is closed.
  const atEnd = format === "json" && io.stdout.isTerminal;
  const progress = io.stderr.isTerminal || forceProgress
    ? progressReporter(io.stderr, io.now ?? Date.now, atEnd)
    : undefined;
  // On one terminal, the progress line is erased before output, and before any other stderr line (--verbose).
  const shared = io.stdout.isTerminal;
  if (progress) session.status.clear = progress.clear;
  const ctrlC = onCtrlC(io);
  const options = { ...request.options, signal: ctrlC.signal };
  // With --fields, a typo is a usage error, not a column of nothing: checked on the first page with items, before output.
  let unchecked = request.fields, refusal: UsageError | undefined;
  try {
    for await (const page of session.client.pages(request.path, options)) {
      if (unchecked !== undefined && page.items.length > 0) {
        refusal = fieldsRefusal(unchecked, page.items);
        if (refusal) throw refusal;
        unchecked = undefined;
      }
      if (shared) progress?.clear();
      writer.page(page.items);
      progress?.page(page.items.length);
    }
  } finally {
    ctrlC.stop?.();
    if (shared) progress?.clear();
    // Whatever stopped the list, what was written stays whole; a refused --fields wrote nothing (no header, no "[]").
    if (refusal === undefined) writer.end();
    progress?.done();
  }
}
