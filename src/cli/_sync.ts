// Internal: the `sync` command: a copy of a list in a SQLite or JSONL file,
// resumed by itself, with a progress line on standard error; Ctrl-C commits
// what it has and ends with 130; the sink's own lock keeps two runs apart
// (a second run waits for the first, saying so).

import { createJsonlSink } from "../sync/jsonl_sink.ts";
import { createSqliteSink } from "../sync/sqlite_sink.ts";
import { syncList } from "../sync/sync_list.ts";
import type { SyncProgress, SyncSink } from "../sync/_types.ts";
import type { Session } from "./_session.ts";
import { Interrupted } from "./_list.ts";
import { type SyncRequest, tableOf } from "./_sync_plan.ts";

/** Brings the copy up to date; returns the items written. */
export async function runSync(
  session: Session,
  request: SyncRequest,
): Promise<number> {
  const { io } = session;
  const interrupt = new AbortController();
  const stopListening = io.onInterrupt?.(() =>
    interrupt.abort(new Interrupted())
  );
  try {
    return await syncInto(session, request, interrupt.signal);
  } finally {
    stopListening?.();
  }
}

async function syncInto(
  session: Session,
  request: SyncRequest,
  signal: AbortSignal,
): Promise<number> {
  const { io } = session;
  const now = io.now ?? Date.now;
  const started = now();
  const progress = progressLine(io.stderr, now, started);
  // Another line on standard error (--verbose) erases it first.
  session.status.clear = progress.end;
  const { sink, close } = openSink(request, (holder) =>
    io.stderr.write(
      `waiting for the run that holds ${request.target} (${holder})\n`,
    ));
  try {
    const result = await syncList(session.client, request.path, {
      id: request.id,
      ...(request.sortBy === undefined ? {} : { sortBy: request.sortBy }),
      sink,
      full: request.full,
      signal,
      query: { ...request.query },
      ...(request.limit === undefined ? {} : { limit: request.limit }),
      ...(request.concurrency === undefined
        ? {}
        : { concurrency: request.concurrency }),
      onProgress: progress.update,
    });
    progress.end();
    const seconds = Math.max((now() - started) / 1000, 0.001);
    io.stderr.write(
      `${request.target}: ${result.written} new item${
        result.written === 1 ? "" : "s"
      } (${result.requests} request${result.requests === 1 ? "" : "s"}, ${
        Math.round(result.written / seconds)
      } items/s${result.resumed ? ", resumed" : ""})\n`,
    );
    return result.written;
  } finally {
    progress.end();
    close();
  }
}

function openSink(
  request: SyncRequest,
  onLockWait: (holder: string) => void,
): { sink: SyncSink<unknown>; close: () => void } {
  // A second run waits for the first until Ctrl-C.
  const lock = { lockWait: Infinity, onLockWait };
  if (request.kind === "jsonl") {
    return { sink: createJsonlSink(request.target, lock), close: () => {} };
  }
  const sink = createSqliteSink(request.target, {
    table: tableOf(request.path),
    ...lock,
  });
  return { sink, close: () => sink.close() };
}

/** Items written and items/s: one line kept current on a terminal, else a line a second. */
function progressLine(
  out: Session["io"]["stderr"],
  now: () => number,
  started: number,
) {
  let shown = false;
  let lastLine = 0;
  return {
    update(progress: SyncProgress) {
      const at = now();
      if (!out.isTerminal && at - lastLine < 1000) return;
      lastLine = at;
      const seconds = Math.max((at - started) / 1000, 0.001);
      const line = `${progress.written} items, ${
        Math.round(progress.written / seconds)
      } items/s, ${progress.requests} requests`;
      if (out.isTerminal) {
        out.write(`\r\x1b[K${line}`);
        shown = true;
      } else out.write(`${line}\n`);
    },
    end() {
      if (shown) out.write("\r\x1b[K");
      shown = false;
    },
  };
}
