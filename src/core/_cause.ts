// Internal: so that "no answer" names the system's reason, not only "fetch failed", and a
// permission the runtime refused is told apart from the network.

import { type Secret, serverText } from "./_redact.ts";
import { given, tried } from "./_check.ts";

/** The causes of a network failure, outermost first, as one line: "fetch failed: connect ECONNREFUSED". */
export function describeCause(error: unknown, secrets: readonly Secret[]) {
  const parts: string[] = [];
  for (let at = error, depth = 0; at !== undefined && depth < 4; depth++) {
    const now = at;
    // A value's text may throw (a null prototype, a getter) or be anything (an array of 2^32 holes joins for a minute):
    // an object not an error says its kind only.
    const text = () =>
      now instanceof Error
        ? now.message
        : Object(now) === now
        ? Object.prototype.toString.call(now)
        : now;
    const message = tried(() => String(text())) ?? "";
    if (message !== "" && !parts.some((part) => part.includes(message))) {
      parts.push(message);
    }
    at = tried(() => now instanceof Error ? now.cause : undefined);
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
  return PERMISSION_ERRORS.has(tried(() => (error as Error)?.name) ?? "");
}

/**
 * What to do about the runtime refusing `url`'s host: the flag to add, or,
 * where `--deny-net` names it (which no `--allow-net` overrides), what to take
 * out of it. `whose`: the setting the host is from, and anything to add.
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
