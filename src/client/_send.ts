// One API request with the bearer token, through core's attempt loop, as `nextStep` (_policy.ts) decides.

import { ApiError } from "../core/errors.ts";
import type { IssuedToken } from "../token/mod.ts";
import type { ApiRequestEvent } from "../core/events.ts";
import {
  type AttemptPlan,
  discard,
  isRetryStatus,
  type Next,
  retryAfterMs,
  retryStep,
  sendAttempts,
} from "../core/_attempt_loop.ts";
import {
  type AttemptLimits,
  type Deadline,
  raceAbort,
  timeoutError,
} from "../core/_deadlines.ts";
import { emit } from "../core/_emit.ts";
import { displayUrl } from "../core/_url.ts";
import { withoutSecretEcho, withoutSecrets } from "../core/_option_secrets.ts";
import {
  handedBy,
  noteHanded,
  type Secret,
  tokensNoted,
} from "../core/_redact.ts";
import { requireSignal, tried, typeError } from "../core/_check.ts";
import {
  cleanCause,
  describeCause,
  isPermissionError,
  netPermissionFix,
} from "../core/_cause.ts";
import { followable } from "./_path.ts";
import { holdsMore, initFault, withBearer, withPairs } from "./_init.ts";
import type { clientConfig } from "./_config.ts";
import { checkPriority, type RatePriority } from "../core/_rate_options.ts";
import { hearsSignal, waited } from "../core/_rate_lines.ts";
import {
  type Attempted,
  isReplayable,
  nextStep,
  type Step,
} from "./_policy.ts";

/** What every request of one client shares. */
export type SendContext = Readonly<ReturnType<typeof clientConfig>["context"]>;

/** A refusal before sending, without the client's credentials or its provider's last tokens (pasted in a path, an option). */
export function refusalShown(context: SendContext, error: unknown): unknown {
  const echo = withoutSecretEcho(error, clientSecret(context));
  return withoutSecrets(echo, [
    ...handedBy(context.tokenProvider),
    ...context.secrets,
  ]);
}

/** The client's secret, where its provider holds the credentials (a provider of the user's may not): checks hide it. */
export const clientSecret = (context: SendContext): string | undefined =>
  context.secrets.find((s) => typeof s === "object")?.secret;

/** One request to send. */
export interface Exchange<T> {
  /** The base the token is bound to; redirects are followed under it only. */
  readonly base: URL;
  /** Which base that is, for events. */
  readonly kind: "api" | "pci";
  readonly url: URL;
  readonly init: RequestInit;
  /** Start of error messages, e.g. "Cannot fetch". */
  readonly context: string;
  /** What must finish within the attempt's time limit (a page's body), given what its errors must not hold (built when read); an `ApiError` here is final. */
  readonly finish: (
    response: Response,
    sent: { readonly secrets: readonly Secret[] },
    attempts: number,
  ) => T | Promise<T>;
}

/** What `finish` made of the answer `exchange` came to; no answer: an `ApiError`, `status` 0, the last failure its `cause`. */
export function sendExchange<T>(context: SendContext, exchange: Exchange<T>) {
  return sendAttempts(new ApiRequest(context, exchange));
}

/** One request under way: its methods are the loop's steps (one object per call, no closures). */
class ApiRequest<T>
  implements AttemptPlan<Response | undefined, T, IssuedToken> {
  readonly signal: AbortSignal | undefined;
  readonly limits: AttemptLimits;
  readonly listener: SendContext["onEvent"];
  readonly now: () => number;
  readonly init: RequestInit;
  readonly method: string;
  readonly replayable: boolean;
  retries = 0;
  redirects = 0;
  renewed = false;
  /** Where the next attempt goes (redirects move it). */
  target: URL;
  accessToken = "";
  /** The token a 401 refused, once renewed: a server may quote it after. */
  refused = "";
  ticket: number | undefined = undefined;
  /** Why the last attempt got no answer. */
  failure: unknown = undefined;

  constructor(readonly context: SendContext, readonly exchange: Exchange<T>) {
    const { init } = exchange;
    this.signal = init.signal ?? undefined;
    requireSignal(this.signal, exchange.context); // else the runtime's own TypeError, naming no option
    this.limits = context.deadlines;
    this.listener = context.onEvent;
    this.now = context.now;
    const given = withPairs(this, init);
    // The call's priority, else the client's (fetch hears it too).
    this.init = init.priority === undefined && context.priority !== "auto"
      ? { ...given, priority: context.priority }
      : given;
    const { method = "GET" } = init;
    // One that is no text as fetch reads it: refused below, in fetch's words. Text, as it comes (hot path).
    const text = typeof method === "string" ? method : tried(() => `${method}`);
    this.method = (text ?? "").toUpperCase();
    this.replayable = isReplayable(init.body);
    this.target = exchange.url;
    // What fetch cannot send costs no token and no slot: a priority fetch lacks, a GET or HEAD with a body, what a
    // Request refuses (as this runtime judges; a body is read once, so one of another method is left out of the check).
    checkPriority(this.init.priority, "auto", exchange.context);
    const bodyless = this.method === "GET" || this.method === "HEAD";
    const checked = init.body != null && bodyless
      ? this.init
      : holdsMore(init)
      ? { ...this.init, body: null, signal: null }
      : undefined;
    const fault = checked === undefined ? undefined : initFault(this, checked);
    if (fault !== undefined) throw fault;
  }

  /** Before each attempt: the token before the slot (a call failing without one holds no slot). No async frame here or in `ready`: each was garbage of every call. */
  before(): Promise<IssuedToken> {
    const { signal, context } = this;
    if (signal === undefined) return context.tokenProvider.getToken(NO_OPTIONS);
    // A provider of the user's may not hear the signal: the caller's abort ends the wait anyway.
    const token = context.tokenProvider.getToken({ signal });
    return raceAbort(Promise.resolve(token), signal);
  }

  /** With the token: a slot in the rate window, at once or after a wait. */
  ready(token: IssuedToken): Promise<void> | void {
    const { signal, context } = this;
    this.hold(token);
    const priority = this.init.priority ?? context.priority;
    const slot = context.rateLimiter?.take(signal, priority);
    if (typeof slot === "object") return waitFor(this, slot, priority);
    this.ticket = slot;
  }

  /** The token the attempts send, noted for the client's redaction. */
  hold(token: IssuedToken): void {
    // A provider of the user's may answer anything: none would be sent as "Bearer undefined".
    const accessToken: unknown = (token as Partial<IssuedToken> | null)
      ?.accessToken;
    // Visible ASCII, what a header carries: else the send fails, blamed on the init.
    if (
      typeof accessToken !== "string" || !/^[\x21-\x7e]+$/.test(accessToken)
    ) {
      const got = accessToken === ""
        ? "an empty accessToken"
        : typeof accessToken === "string"
        ? "an accessToken with a space, line break or non-ASCII character"
        : typeof token === "object" && token !== null
        ? `an accessToken of type ${typeof accessToken}`
        : `${token === null ? "null" : typeof token}`;
      throw typeError(this.exchange.context, "tokenProvider", NO_TOKEN, got);
    }
    this.accessToken = accessToken;
    noteHanded(this.context.tokenProvider, accessToken); // a provider of the user's notes none
    tokensNoted.get(this.context.tokenProvider)?.forEach((n) =>
      n.add(accessToken)
    );
  }

  /** What an error redacts: the configured credentials, and the tokens sent, the one replaced too (built only when read). */
  get secrets(): readonly Secret[] {
    const handed = handedBy(this.context.tokenProvider);
    const tokens = new Set([this.accessToken, this.refused, ...handed]);
    tokens.delete("");
    return [...tokens, ...this.context.secrets];
  }

  /** The target's path as events show it: a secret or token pasted in it redacted, as errors redact it. */
  get shownPath(): string {
    const { pathname } = this.target;
    // Cleaned once per path while the tokens stay (a redaction is tens of µs; a list's pages share one path).
    const handed = handedBy(this.context.tokenProvider);
    const tokens = `${this.accessToken} ${this.refused} ${handed}`;
    let shown = shownPaths.get(this.context);
    if (shown?.tokens !== tokens || shown.paths.size >= MAX_SHOWN) {
      shownPaths.set(this.context, shown = { tokens, paths: new Map() });
    }
    let path = shown.paths.get(pathname);
    if (path === undefined) {
      path = withoutSecrets(pathname, this.secrets);
      shown.paths.set(pathname, path);
    }
    return path;
  }

  /** One attempt: the answer or `undefined`; raced, as a caller's `fetch` may ignore its signal (no async frame: garbage of every call). */
  attempt(deadline: Deadline): Promise<Response | undefined> {
    const { init } = this;
    try {
      const sent = this.context.fetch(this.target.href, {
        ...init,
        headers: withBearer(init.headers, this.accessToken),
        redirect: "manual",
        signal: deadline.signal,
      });
      return deadline.race(sent, discard).then(undefined, (e) => this.no(e));
    } catch (error) {
      return Promise.resolve(this.no(error));
    }
  }

  /** The answer whose body failed within its attempt (cut off, or too slow): no answer, as its event says. */
  cut: Response | undefined;

  /** A 2xx is delivered, its body read within the attempt: told once that is decided. */
  tellsAfterNext(response: Response | undefined): boolean {
    return response?.ok === true;
  }

  /** No answer: the caller's abort ends the request; another failure is the next step's to judge. */
  no(error: unknown): undefined {
    this.signal?.throwIfAborted();
    this.failure = error;
  }

  /** Decides with {@linkcode nextStep}; delivering (the usual case) needs no await. */
  next(
    response: Response | undefined,
    deadline: Deadline,
    attempts: number,
  ): Next<T> | Promise<Next<T>> {
    if (response === undefined) {
      this.signal?.throwIfAborted();
      // The runtime refused the host: no retry can pass; the error names the flag to add, or the `--deny-net` to remove.
      if (isPermissionError(this.failure)) {
        const url = displayUrl(this.target);
        const setting = this.exchange.kind === "api" ? "baseUrl" : "pciBaseUrl";
        const base = this.context.baseNames[setting];
        const whose = `${base}'s host; ${this.method} ${url} was not sent`;
        const fix = netPermissionFix(this.target, whose);
        const cause = cleanCause(this.failure, this.secrets);
        const error = new ApiError(
          `${this.exchange.context}: no net permission for ${this.target.host}: ${fix}`,
          { status: 0, url, cause, reason: "network", attempts },
        );
        return { do: "fail", error: withoutSecrets(error, this.secrets) };
      }
      // An init fetch cannot make a request of (a bad header, a GET with a body): no attempt could.
      // A body read once may be spent by the failed attempt: only one sent again is tried.
      const typeError = tried(() => this.failure instanceof TypeError); // a Proxy's trap may throw
      const bad = typeError && this.replayable ? initFault(this) : undefined;
      if (bad !== undefined) return { do: "fail", error: bad };
    } else if (response.status === 429) {
      // The service counts more than this limiter saw (other processes); a Retry-After is the retry's own wait.
      this.context.rateLimiter?.refused();
    }
    const step = nextStep(attempted(this, response), this, this.context.retry);
    return step.do === "deliver"
      ? deliver(this, response!, deadline, attempts)
      : carryOut(this, response, deadline, attempts, step);
  }

  heard(
    response: Response | undefined,
    attempt: number,
    durationMs: number,
    deadline: Deadline,
  ): ApiRequestEvent {
    const { hostname, port, protocol } = this.target;
    const answered = response !== undefined && response !== this.cut;
    return {
      type: "api.request",
      method: this.method,
      base: this.exchange.kind,
      path: this.shownPath,
      // Where it went: host (an IPv6 address without brackets) and port.
      host: hostname.replace(/^\[(.*)\]$/, "$1"),
      port: Number(port || (protocol === "https:" ? 443 : 80)),
      status: answered ? response.status : 0,
      ...(answered ? {} : { reason: noAnswerReason(deadline) }),
      attempt,
      durationMs,
    };
  }

  /** The attempt is over (headers in, or a page's body read): the window counts it from here. */
  after(): void {
    if (this.ticket === undefined) return;
    this.context.rateLimiter!.answered(this.ticket);
    this.ticket = undefined;
  }
}

/** What the attempt came to, for {@linkcode nextStep}. */
function attempted(
  request: ApiRequest<unknown>,
  response: Response | undefined,
): Attempted {
  if (response === undefined) return NO_ANSWER;
  const { status } = response;
  const { target, exchange, method } = request;
  return {
    kind: "answer",
    status,
    retryAfter: isRetryStatus(status)
      ? retryAfterMs(response.headers, request.now())
      : undefined,
    redirect: status >= 300 && status < 400
      ? secretFree(followable(response, target, exchange.base, method), request)
      : undefined,
  };
}

/** A redirect's target, unless it holds the token or a credential (following sent them on): the 3xx is then the answer. */
function secretFree(to: URL | undefined, request: ApiRequest<unknown>) {
  if (to === undefined) return undefined;
  const shown = to.pathname + to.search;
  return withoutSecrets(shown, request.secrets) === shown ? to : undefined;
}

/** Hands the answer back through `finish`, within the attempt's time limit. */
function deliver<T>(
  request: ApiRequest<T>,
  response: Response,
  deadline: Deadline,
  attempts: number,
): Next<T> | Promise<Next<T>> {
  const done = request.exchange.finish(response, request, attempts);
  if (!(done instanceof Promise)) return { do: "done", value: done };
  return deadline.race(done).then(
    (value): Next<T> => ({ do: "done", value }),
    (error: unknown) => {
      // The service's refusal is final; a body cut off or too slow is no answer, and retried like one.
      if (error instanceof ApiError) throw error;
      request.no(error);
      request.cut = response;
      const step = nextStep(NO_ANSWER, request, request.context.retry);
      return carryOut(request, undefined, deadline, attempts, step);
    },
  );
}

/** Carries out a renewal, a redirect, a retry or a failure. */
async function carryOut<T>(
  request: ApiRequest<T>,
  response: Response | undefined,
  deadline: Deadline,
  attempts: number,
  step: Step,
): Promise<Next<T>> {
  if (step.do === "renew") {
    if (await renew(request, response!)) return AGAIN;
    return await deliver(request, response!, deadline, attempts);
  }
  // No answer is never delivered: after one, it is retry or fail.
  if (step.do !== "retry" && step.do !== "follow") {
    const { secrets, target, method, exchange, limits } = request;
    const cause = deadline.timedOut ? timeoutError(limits.ms) : request.failure;
    const reason = noAnswerReason(deadline);
    const url = displayUrl(target);
    const tries = attempts > 1 ? ` in ${attempts} attempts` : "";
    // A fetch's error may quote what it was handed: the token, or a credential.
    const why = describeCause(cause, secrets);
    const error = new ApiError(
      `${exchange.context}: ${method} ${url} got no answer${tries}: ${why}`,
      { status: 0, url, cause: cleanCause(cause, secrets), reason, attempts },
    );
    return { do: "fail", error: withoutSecrets(error, secrets) };
  }
  if (response !== undefined) await discard(response);
  if (step.do === "follow") {
    request.redirects++;
    request.target = step.to;
    return AGAIN;
  }
  request.retries++;
  const status = response?.status ?? 0;
  const reason = status !== 0 ? "status" : noAnswerReason(deadline);
  return retryStep(request.listener, "api.retry", reason, status, step.wait);
}

/** Waits for a slot; a listener hears how long, and for what priority, if it waited for the window (not for a store). */
async function waitFor(
  request: ApiRequest<unknown>,
  slot: Promise<number>,
  priority: RatePriority,
) {
  const { listener, context, signal } = request;
  const started = listener === undefined ? 0 : context.now();
  // A limiter of the user's may not hear the signal: the caller's abort ends the wait anyway, and a slot granted after
  // it is answered at once (never sent). This library's line hears it, one listener per signal (not O(N²) on abort).
  request.ticket = await (hearsSignal(slot) ? slot : raceAbort(
    slot,
    signal,
    (ticket) => void tried(() => context.rateLimiter!.answered(ticket)), // nobody is left to hear what it throws
  ));
  if (listener !== undefined && waited(slot)) {
    const delayMs = context.now() - started;
    emit(listener, { type: "rate.wait", delayMs, priority });
  }
  // The token taken before the wait may expire in it: the provider's again (its cache, or refreshed). A failure, thrown
  // or rejected, answers the slot, which would else be held for good.
  try {
    request.hold(await request.before());
  } catch (error) {
    request.after();
    throw error;
  }
}

/** Asks the provider's ledger whether this 401 may cost a fresh token; a caller's abort does not wait for its answer. */
async function renew(request: ApiRequest<unknown>, response: Response) {
  const { context, accessToken, listener, signal } = request;
  let renews: boolean;
  try {
    const asked = Promise.resolve(context.renewAfterUnauthorized(accessToken));
    renews = await raceAbort(asked, signal);
  } catch (error) {
    await discard(response);
    throw error;
  }
  if (!renews) return false;
  request.renewed = true;
  request.refused = accessToken;
  if (listener !== undefined) {
    emit(listener, { type: "api.renewal", path: request.shownPath });
  }
  await discard(response);
  return true;
}

/** Per client, the paths its events showed lately, for the tokens they were cleaned of (at most `MAX_SHOWN`). */
const shownPaths = new WeakMap<
  SendContext,
  { readonly tokens: string; readonly paths: Map<string, string> }
>();
const MAX_SHOWN = 256;

/** Why an attempt got no answer, as its event and error say. */
const noAnswerReason = (deadline: Deadline) =>
  deadline.timedOut ? "timeout" : "network";

const NO_TOKEN =
  "must answer getToken() with an IssuedToken whose accessToken is non-empty visible ASCII";
const NO_ANSWER: Attempted = Object.freeze({ kind: "no answer" });
const AGAIN: Next<never> = Object.freeze({ do: "again", wait: 0 });
const NO_OPTIONS = Object.freeze({});
