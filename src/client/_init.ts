// The caller's init as fetch can send it: headers of any form fetch takes, with the bearer token, and what fetch would
// refuse, refused before the call costs a token or a slot.

import { redact, type Secret } from "../core/_redact.ts";
import { typeError } from "../core/_check.ts";

/** What an init's check needs of its request: where it goes, the token it sends, what it redacts, whose call it is. */
export interface InitOf {
  readonly init: RequestInit;
  readonly target: URL;
  readonly accessToken: string;
  readonly secrets: readonly Secret[];
  readonly exchange: { readonly context: string };
}

/** Whether an init holds more than a signal, a priority and a body (the usual call): what else it holds fetch may refuse. */
export function holdsMore(init: RequestInit): boolean {
  for (const key in init) {
    if (key !== "signal" && key !== "priority" && key !== "body") return true;
  }
  return false;
}

/** The init's fault, as a TypeError (`option: "init"`), when fetch cannot make a request of it; else undefined. */
export function initFault(request: InitOf, init: RequestInit = request.init) {
  try {
    // Headers given as pairs are copied here, and a bad one throws (quoting its value): caught too.
    const headers = withBearer(init.headers, request.accessToken);
    new Request(request.target, { ...init, headers, redirect: "manual" });
  } catch (error) {
    return initRefusal(request, error);
  }
  return undefined;
}

/** The init's refusal for `error`: the runtime's words, less what they quote of the init (it may hold a token). */
function initRefusal(request: InitOf, error: unknown): TypeError {
  const message = redact(
    String((error as Error | null)?.message),
    request.secrets,
  );
  const why = message.replace(QUOTED, "$1[not shown]$1");
  return typeError(request.exchange.context, "init", SENDABLE, why);
}

/**
 * The init with headers given as an iterable of pairs other than an array or a `Headers` (a Map, a generator), as
 * fetch takes them, read once into pairs for every attempt (copied as a record, they were dropped). Each pair is copied
 * as it comes: a generator may hand out one array again, or pairs read once. @throws {TypeError} (`option: "init"`)
 */
export function withPairs(request: InitOf, init: RequestInit) {
  const headers: unknown = init.headers;
  const iterable = typeof headers === "object" && headers !== null &&
    !(headers instanceof Headers) && !Array.isArray(headers) &&
    Symbol.iterator in headers;
  if (!iterable) return init;
  try {
    const pairs = Array.from(
      headers as Iterable<unknown>,
      (pair) =>
        typeof pair === "object" && pair !== null
          ? [...pair as Iterable<unknown>]
          : pair,
    );
    return { ...init, headers: pairs as [string, string][] };
  } catch (error) {
    throw initRefusal(request, error);
  }
}

/** A quoted run of the runtime's words (a header, a method, an enum value). */
const QUOTED = /(["'`])(?:(?!\1)[^\n])*\1/g;

const SENDABLE = "must be a RequestInit fetch can send";

/** The caller's headers with the token as Authorization; a record stays one (a `Headers` costs more). */
export function withBearer(
  headers: HeadersInit | undefined,
  accessToken: string,
) {
  const authorization = `Bearer ${accessToken}`;
  if (headers === undefined) return { authorization };
  // Not a record (a string is none: its characters were sent as headers), copied as fetch reads it.
  const isRecord = typeof headers === "object" && headers !== null &&
    !(headers instanceof Headers) && !Array.isArray(headers);
  if (!isRecord) {
    const copy = new Headers(headers);
    copy.set("authorization", authorization);
    return copy;
  }
  const record: Record<string, string> = { authorization };
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== "authorization") record[name] = value;
  }
  return record;
}
