// Internal: the commands but list and sync, over one session (provider, client, cache), writing through CliWriters.

import {
  ApiError,
  QuotaExceededError,
  TokenRequestError,
} from "../core/errors.ts";
import type { QuotaSnapshot } from "../token/mod.ts";
import type { Session } from "./_session.ts";
import { Interrupted, runList } from "./_list.ts";
import { readBounded } from "../core/_attempt_loop.ts";
import { escapeControls } from "../core/_controls.ts";
import { serverText } from "../core/_redact.ts";
import { isPermissionError } from "../core/_cause.ts";
import { tried } from "../core/_check.ts";
import { runSync } from "./_sync.ts";
import {
  counted,
  duration,
  gauge,
  safeJson,
  table,
  utcTime,
} from "./_render.ts";
import type { Plan, SessionFlags } from "./_plan.ts";
import { UsageError } from "./_flag_values.ts";

/** Runs a planned command (not help, version or demo). */
export async function execute(
  session: Session,
  planned: SessionPlan,
  forceProgress = false,
): Promise<void> {
  if (planned.command === "token") {
    await runToken(session, planned.showToken, planned.json);
  } else if (planned.command === "quota") await runQuota(session, planned.json);
  else if (planned.command === "get") {
    await runGet(session, planned.path, planned.pci);
  } else if (planned.command === "sync") await runSync(session, planned.sync);
  else await runList(session, planned.list, forceProgress);
}

/** The commands that talk to the service. */
export type SessionPlan = Extract<Plan, SessionFlags>;

function cost(session: Session): string {
  const requests = session.tokenRequests();
  if (requests > 0) return counted(requests, "token request");
  return session.cache ? "cached: no token request" : "no token request";
}

async function runToken(session: Session, showToken: boolean, json: boolean) {
  const token = await session.provider.getToken();
  const { io } = session;
  const now = (io.now ?? Date.now)();
  const buckets = bucketsNow(session.provider.quota, now);
  const cached = session.tokenRequests() === 0; // not seen by the service this run
  if (json) {
    const answer = {
      expiresAt: new Date(token.expiresAt).toISOString(),
      expiresIn: Math.max(0, Math.floor((token.expiresAt - now) / 1000)),
      quota: buckets,
      tokenRequests: session.tokenRequests(),
      cached,
      ...(showToken ? { accessToken: token.accessToken } : {}),
    };
    return io.stdout.write(`${safeJson(answer)}\n`);
  }
  const summary = showToken ? io.stderr : io.stdout;
  if (showToken) io.stdout.write(`${token.accessToken}\n`);
  const left = (token.expiresAt - now) / 1000;
  const gauges = buckets.length === 0
    ? "  (the token endpoint reported no quota)\n"
    : buckets.map((bucket) => gauge(bucket)).join("");
  const spent = cost(session);
  const until = `${utcTime(token.expiresAt)} (in ${duration(left)}; ${spent})`;
  const what = cached ? "cached, unchecked token expires" : "token valid until";
  summary.write(`${what} ${until}\nquota:\n${gauges}`);
}

/** How often a bucket resets, by name: the hourly on the UTC hour, the daily on the UTC day. */
const PERIODS: Readonly<Record<string, number>> = {
  per_hour: 3_600_000,
  per_day: 86_400_000,
};

/**
 * The buckets as they stand at `now`, from a reading taken earlier: one whose reset passed is full, and resets next a
 * period on (not "resets in 0 s"); a bucket of another name, at 0 s.
 */
function bucketsNow(quota: QuotaSnapshot | undefined, now: number) {
  return (quota?.buckets ?? []).map((bucket) => {
    let resetAt = quota!.observedAt + bucket.resetAfter * 1000;
    if (resetAt > now) {
      return { ...bucket, resetAfter: Math.round((resetAt - now) / 1000) };
    }
    const period = PERIODS[bucket.bucket];
    if (period !== undefined) {
      resetAt += period * (Math.floor((now - resetAt) / period) + 1);
    }
    const resetAfter = Math.max(0, Math.round((resetAt - now) / 1000));
    return { ...bucket, remaining: bucket.limit, resetAfter };
  });
}

/** The quota from what is known without a token request (the cache, or its quota block), else one token request, else its 429. */
async function runQuota(session: Session, json: boolean): Promise<void> {
  const { io } = session;
  const now = io.now ?? Date.now;
  const known = await session.cache?.record().catch(() => undefined);
  let quota = known?.quota;
  let blockedUntil = known?.blockedUntil;
  let source = quota ? "from the cache: no token request" : "";
  if (quota === undefined) {
    try {
      await session.provider.getToken();
      quota = session.provider.quota;
    } catch (error) {
      if (!(error instanceof QuotaExceededError)) throw error;
      quota = { buckets: error.buckets, observedAt: now() };
      blockedUntil = error.retryAt;
    }
    source = cost(session);
  }
  const at = now();
  const blocked = blockedUntil !== undefined && at < blockedUntil;
  const buckets = bucketsNow(quota, at);
  if (json) {
    // A key left undefined is not written.
    const answer = {
      buckets,
      observedAt: quota && new Date(quota.observedAt).toISOString(),
      blockedUntil: blocked ? new Date(blockedUntil!).toISOString() : undefined,
      tokenRequests: session.tokenRequests(),
    };
    return io.stdout.write(`${safeJson(answer)}\n`);
  }
  const rows = buckets.map(({ resetAfter, ...bucket }) => ({
    ...bucket,
    "resets in": duration(resetAfter),
    "resets at": utcTime(at + resetAfter * 1000),
  }));
  io.stdout.write(
    rows.length === 0
      ? "the token endpoint reported no quota\n"
      : table(["bucket", "limit", "remaining", "resets in", "resets at"], rows),
  );
  const age = quota ? Math.round((at - quota.observedAt) / 1000) : 0;
  io.stderr.write(
    `(${source}${age > 0 ? `; reported ${duration(age)} ago` : ""})\n`,
  );
  if (blocked) {
    const until = utcTime(blockedUntil!);
    io.stdout.write(
      `token requests blocked until ${until} (a 429 said the quota is spent)\n`,
    );
  }
}

/** The largest body `get` prints. */
const MAX_BODY = 32 * 1024 * 1024;
/** How long `get` waits for the next byte of a body once its headers came, in ms: the client's own attempt limit. */
const BODY_TIME = 30_000;

/** `get`: pretty JSON on a terminal, else the bytes as they came; not 2xx: an Error with the status and an excerpt (exit 1). */
async function runGet(session: Session, path: string, pci: boolean) {
  const { client, io } = session;
  // The client's time limit ends at the headers: the body gets one of its own, as a list page's read is timed.
  const body = new AbortController();
  const init = { signal: body.signal };
  const response = await client[pci ? "pciFetch" : "fetch"](path, init);
  const stalled = `no byte of the answer for ${BODY_TIME} ms`;
  const watched = stallWatch(response, () => body.abort(new Error(stalled)));
  const text = await readBounded(watched.response, MAX_BODY).catch((error) => {
    // The connection lost while the body came: the network's failure (exit 1), though fetch throws it as a TypeError.
    const said = body.signal.aborted ? stalled : String(error?.message);
    const why = serverText(said, session.secrets());
    throw new Error(`the answer broke off: ${why}`, { cause: error });
  }).finally(watched.stop);
  if (text === undefined) {
    throw new Error(`the answer is over ${MAX_BODY} bytes`);
  }
  const where = new URL(response.url || path, "http://x").pathname;
  if (!response.ok) {
    const excerpt = serverText(text, session.secrets()).slice(0, 300);
    const said = excerpt ? `: ${excerpt}` : "";
    const answered = `GET ${where} answered ${response.status}${said}`;
    // As a list's 401: the line ends with the command that clears the cached token.
    if (response.status === 401) {
      const refused =
        " (the token was refused; a fresh one is asked for after a 401 once an hour at most: check the client's access to the path)";
      throw new ApiError(answered + refused, { status: 401, url: where });
    }
    // Card data live on the card-data base: a 404 there names --pci.
    const card = " (card data are on the card-data base: add --pci)";
    const cards = response.status === 404 && !pci &&
      /^\/?cards(\/|\?|$)/.test(path);
    throw new Error(answered + (cards ? card : ""));
  }
  if (!io.stdout.isTerminal) return io.stdout.write(text);
  // Escaped line by line: the layout's line breaks stay.
  const json = tried(() => JSON.stringify(JSON.parse(text), null, 2));
  const lines = (json ?? text).split("\n").map(escapeControls);
  io.stdout.write(`${lines.join("\n")}\n`);
}

/** `response` whose body calls `stalled` once no byte came for BODY_TIME (a slow, steady body reads through). */
function stallWatch(response: Response, stalled: () => void) {
  let timer = setTimeout(stalled, BODY_TIME);
  const body = response.body?.pipeThrough(
    new TransformStream({
      transform(chunk, stream) {
        clearTimeout(timer);
        timer = setTimeout(stalled, BODY_TIME);
        stream.enqueue(chunk);
      },
    }),
  );
  return {
    response: new Response(body, response),
    stop: () => clearTimeout(timer),
  };
}

/** One line for standard error, and the exit code: 2 for the caller's mistakes, 130 for Ctrl-C (143 SIGTERM, 129 SIGHUP), 1 for the service's or network's. */
export function failureMessage(error: unknown) {
  // The library reports the service as ApiError or TokenRequestError: its TypeError and RangeError are about arguments.
  // Deno refusing a permission outright (the demo's own server) is the command's to fix too.
  const usage = error instanceof UsageError || error instanceof TypeError ||
    error instanceof RangeError || isPermissionError(error);
  if (usage || error instanceof Interrupted) {
    const code = usage ? 2 : (error as Interrupted).exitCode;
    return { message: (error as Error).message, code };
  }
  // The library's message names what to fix (the variables, the flag to add): passed on as it is.
  if (error instanceof TokenRequestError || error instanceof ApiError) {
    // Refused by Deno: its words ("run again with the --allow-net flag") name no host; the message names the flag.
    const refused = isPermissionError(error.cause);
    // A timeout's cause is the timer's own words: the message says its limit already.
    const cause = error.cause instanceof Error && !refused &&
        error.reason !== "timeout" &&
        !error.message.includes(error.cause.message)
      ? `: ${error.cause.message}`
      : "";
    // A missing --allow-net is the command's to fix, as a missing --allow-read is (2): a retry changes nothing.
    return { message: `${error.message}${cause}`, code: refused ? 2 : 1 };
  }
  return {
    message: error instanceof Error ? error.message : String(error),
    code: 1,
  };
}
