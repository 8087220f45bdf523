// Internal: the address rules shared by environments, tokens and the client.

import { tried, typeError } from "./_check.ts";

function isLoopback({ protocol, hostname }: URL): boolean {
  return protocol === "http:" &&
    (hostname === "localhost" || hostname === "[::1]" ||
      /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname));
}

/** Shows an address in an error message without any user info it holds. */
export function displayUrl(url: URL): string {
  if (url.username === "" && url.password === "") return url.href;
  const copy = new URL(url);
  copy.username = "";
  copy.password = "";
  return copy.href;
}

/** The error for an address that breaks `rule`, shown without user info. */
export function urlError(
  context: string,
  field: string,
  rule: string,
  url: URL,
): TypeError {
  return typeError(context, field, rule, displayUrl(url));
}

/** Parses `value` as an address that may carry credentials: `https:`, or `http:` on loopback only. */
export function secureUrl(value: string | URL, context: string, field: string) {
  if (!(typeof value === "string" || value instanceof URL)) {
    throw typeError(context, field, "must be a string or URL", typeof value);
  }
  const url = tried(() => new URL(value));
  if (url === undefined) {
    throw typeError(context, field, "must be an absolute URL", String(value));
  }
  if (url.protocol !== "https:" && !isLoopback(url)) {
    throw urlError(context, field, "must use https", url);
  }
  if (url.username !== "" || url.password !== "") {
    throw urlError(context, field, "must not hold credentials", url);
  }
  // Never sent: a fragment in a token URL is a pasting mistake, refused as in a base.
  if (url.hash !== "") {
    throw urlError(context, field, "must not have a fragment", url);
  }
  return url;
}
