// Internal: so that "no answer" names the system's reason, not only "fetch failed", a permission the runtime refused is
// told apart from the network, and what was thrown reaches a `cause` as a clean copy.

import { type Secret, serverText } from "./_redact.ts";
import { given, tried } from "./_check.ts";

/** The causes of a network failure, outermost first, as one line: "fetch failed: connect ECONNREFUSED". */
export function describeCause(error: unknown, secrets: readonly Secret[]) {
  const parts: string[] = [];
  for (let at = error, depth = 0; at !== undefined && depth < 4; depth++) {
    // An object not an error says its kind only: its text may throw, or take a minute (an array of 2^32 holes).
    const text = () =>
      at instanceof Error
        ? at.message
        : Object(at) === at
        ? Object.prototype.toString.call(at)
        : at;
    const message = tried(() => String(text())) ?? "";
    if (message !== "" && !parts.some((part) => part.includes(message))) {
      parts.push(message);
    }
    at = tried(() => at instanceof Error ? at.cause : undefined);
  }
  return serverText(parts.join(": ") || "unknown error", secrets);
}

/** Whether `error` is the runtime refusing a permission (Deno without `--allow-net`; no retry helps): by name, no Deno API. */
export function isPermissionError(error: unknown): boolean {
  const name = tried(() => (error as Error)?.name);
  return name === "NotCapable" || name === "PermissionDenied";
}

/**
 * What to do about the runtime refusing `url`'s host: the flag to add, or, where `--deny-net` names it (which no
 * `--allow-net` overrides), what to take out of it. `whose`: the setting the host is from, and anything to add.
 */
export function netPermissionFix(url: URL, whose: string): string {
  const denied = deniedEntry(url);
  if (denied === undefined) {
    return `add --allow-net=${url.host} (the net permission for ${whose})`;
  }
  const entry = denied || "every host";
  // A wildcard or address range in --deny-net answers as the host it covers: the entry may be written otherwise.
  const remove = denied === ""
    ? "--deny-net"
    : `${denied} from --deny-net (or the entry there that covers it)`;
  return `--deny-net denies ${entry}, and no --allow-net overrides it: remove ${remove}, and grant --allow-net=${url.host} if it is not (${whose})`;
}

/**
 * What `--deny-net` names of `url`: its host and port, its host name, "" for every host; `undefined` when not denied
 * (or not Deno). The port is asked for as the request uses it: an entry with `:443` does not deny the bare host name.
 */
function deniedEntry(url: URL): string | undefined {
  // Looked up, not named: the core stays free of Deno APIs on other runtimes.
  const permissions = (globalThis as {
    Deno?: {
      permissions?: {
        querySync?(query: { name: "net"; host?: string }): { state: string };
      };
    };
  }).Deno?.permissions;
  const denied = (host?: string) => {
    const query = { name: "net" as const, ...given({ host }) };
    // A runtime whose query throws (or has none): the flag to add is still the fix.
    return tried(() => permissions?.querySync?.(query).state) === "denied";
  };
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  const reached = `${url.hostname}:${port}`;
  if (!denied(reached)) return undefined;
  // A host --allow-net leaves out, refused without a terminal to ask, reads "denied" afterwards, and so does net as a
  // whole (Deno 2.9); a host nobody asked for is denied only by a --deny-net of every host.
  if (denied()) return denied("192.0.2.1:9") ? "" : undefined; // TEST-NET-1 (RFC 5737): asked for by no request
  return denied(url.hostname) ? url.hostname : reached;
}

/**
 * `error` fit for a `cause`: never the thrown value (a user's fetch may keep the request, secret included, where no
 * check sees it), but a copy of the runtime's own class with its name, message and primitive fields (`code`) cleaned
 * as server text; its cause and an AggregateError's errors alike, 32 copies at most. Any other value: its kind.
 */
export function cleanCause(
  error: unknown,
  secrets: readonly Secret[],
  budget = { copies: 32 },
): unknown {
  const text = (value: unknown) =>
    serverText(tried(() => String(value)) ?? "", secrets);
  if (Object(error) !== error) return primitive(error, text);
  const Type: unknown = tried(() => nativeTypeOf(error as object));
  // Copies are counted, not levels: an error whose errors are itself 16 times made 89,000.
  if (Type === undefined || --budget.copies < 0) {
    return text(tried(() => Object.prototype.toString.call(error)));
  }
  const found = error as Error & { errors?: unknown };
  const copied = (value: unknown) => cleanCause(value, secrets, budget);
  const options = given({ cause: copied(tried(() => found.cause)) }); // undefined: none
  const message = text(tried(() => found.message));
  const name = text(tried(() => found.name));
  const copy: Error = Type === DOMException
    ? new DOMException(message, name) // its name is its prototype's getter's
    : Type === AggregateError
    ? new AggregateError(
      firstOf(tried(() => found.errors)).map(copied),
      message,
      options,
    )
    : new (Type as ErrorConstructor)(message, options);
  if (Type !== DOMException) copy.name = name;
  primitiveFields(copy, error as object, text);
  return copy;
}

/** `error`'s own primitive fields (`code`, `errno`: the first 16) onto `copy`, texts cleaned. */
function primitiveFields(
  copy: Error,
  error: object,
  text: (value: unknown) => string,
) {
  for (const key of firstOf(tried(() => Object.keys(error))) as string[]) {
    const value = tried(() => (error as Record<string, unknown>)[key]);
    // A name like `code` only: a key may be anything, the request body too.
    const named = /^[A-Za-z_$][\w$]{0,39}$/.test(key) && text(key) === key;
    if (Object(value) === value || key in copy || !named) continue;
    (copy as unknown as Record<string, unknown>)[key] = primitive(value, text); // no setter: not `in` it
  }
}

/** A primitive fit for a copy: a text or symbol cleaned; a bigint by its kind (its digits may hold any bytes). */
function primitive(value: unknown, text: (value: unknown) => string) {
  if (typeof value === "bigint") return "[object BigInt]";
  const shown = typeof value === "string" || typeof value === "symbol";
  return shown ? text(value) : value;
}

/** The first items of `list` (16: an AggregateError's errors, an error's fields), read one by one; none if no array. */
function firstOf(list: unknown): unknown[] {
  const items = tried(() => Array.isArray(list)) ? list as unknown[] : [];
  const length = Math.min(tried(() => items.length) ?? 0, 16);
  return Array.from({ length }, (_, at) => tried(() => items[at]));
}

/** The runtime's own error class `value` is of, if any (a chain looked up 32 deep: a Proxy may answer with a cycle). */
function nativeTypeOf(value: object) {
  let type = Object.getPrototypeOf(value);
  for (let step = 0; type !== null && step < 32; step++) {
    if (nativeErrors().has(type)) return type.constructor;
    type = Object.getPrototypeOf(type);
  }
  return undefined;
}

/** The prototypes of the runtime's own errors (Deno's by `Deno.errors`, looked up). */
function nativeErrors(): ReadonlySet<unknown> {
  const global: Record<string, { prototype?: unknown }> = globalThis as never;
  const deno = (globalThis as { Deno?: { errors?: object } }).Deno?.errors;
  const names =
    "Error EvalError RangeError ReferenceError SyntaxError TypeError URIError AggregateError DOMException";
  const types = [
    ...names.split(" ").map((name) => global[name]),
    ...Object.values(deno ?? {}),
  ];
  return natives ??= new Set(types.map((type) => type?.prototype));
}
let natives: Set<unknown> | undefined;
