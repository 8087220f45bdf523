// Internal: the `list` command: items as they come, progress on a terminal,
// and on Ctrl-C an output that is still whole (a JSON array closed) and
// exit code 130.

import type { Session } from "./_session.ts";
import { itemWriter } from "./_output.ts";
import type { ListRequest } from "./_plan.ts";
import { escapeControls, progressReporter } from "./_render.ts";

/** Ctrl-C stopped the run: exit code 130, as shells expect. */
export class Interrupted extends Error {
  override readonly name = "Interrupted";
  constructor() {
    super("interrupted");
  }
}

/** Writes every item of the list; returns how many. */
export async function runList(
  session: Session,
  request: ListRequest,
  forceProgress = false,
): Promise<number> {
  const { io } = session;
  const format = request.format ?? (io.stdout.isTerminal ? "table" : "jsonl");
  const said = new Set<string>();
  const writer = itemWriter(io.stdout, format, {
    pageSize: request.limit,
    fields: request.fields,
    notify: (line) => {
      if (said.has(line)) return;
      said.add(line);
      io.stderr.write(`${escapeControls(line)}\n`);
    },
  });
  // JSON on a terminal: no progress line may land inside the array, so
  // the count is said once, after it is closed.
  const atEnd = format === "json" && io.stdout.isTerminal;
  const progress = io.stderr.isTerminal || forceProgress
    ? progressReporter(io.stderr, request.limit, Date.now, atEnd)
    : undefined;
  // On one terminal, the progress line is erased before output is written.
  const shared = io.stdout.isTerminal;
  const interrupt = new AbortController();
  const stopListening = io.onInterrupt?.(() =>
    interrupt.abort(new Interrupted())
  );
  let items = 0;
  try {
    for await (
      const item of session.client.list(request.path, {
        ...request.options,
        signal: interrupt.signal,
      })
    ) {
      if (shared) progress?.clear();
      writer.write(item);
      progress?.item();
      items++;
    }
  } finally {
    stopListening?.();
    if (shared) progress?.clear();
    // Whatever stopped the list, what was written stays whole.
    writer.end();
    progress?.done();
  }
  return items;
}
