// The boundary the bearer token never crosses: every address it is sent to, redirects too, passes here.

import { displayUrl } from "../core/_url.ts";
import { tried, typeError } from "../core/_check.ts";
import { LENIENT } from "../core/_redact.ts";
import { secretOutOfChecks } from "../core/_option_secrets.ts";

/**
 * Path forms a server may read as outside the base though the URL parser kept them in: encoded `/`
 * and `\` (`..%2f..%2fadmin`), double encoding (`%252e%252e%252f`), `..;/`, an escape that is not two hex digits.
 */
const RISKY_PATH = /%(?:2f|5c)|%25[0-9a-f]{2}|;|%(?![0-9a-f]{2})/i;
// Forms the URL parser tidies away unseen by isUnder (a backslash made `/`, a `.` or `..` segment, plain or escaped),
// judged in a path as the parser reads it (tabs and line breaks dropped, the ends trimmed), before `?` or `#`.
const TIDIED = /\\|(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;
/** Characters that NFKC maps to something holding `.`, `/` or `\` (`．`, `․`, `／`). */
const LOOKALIKE = /[^\p{ASCII}]/gu;
/** Overlong UTF-8 (`%c0%ae` for `.`, `%e0%80%ae`): never valid, only hides a character some servers decode. */
const OVERLONG = /%c[01]|%e0%[89]|%f0%8/i;
/** A run of percent-escapes, decoded together (one character may take four). */
const ESCAPES = /(?:%[0-9a-f]{2})+/gi;

/**
 * Resolves `path` under `base`: `"x"` and `"/x"` both mean `{base}x`, an absolute address must already be under `base`.
 * @throws {TypeError} Outside `base`: another origin, a climbing path, user info, an encoded separator.
 */
export function resolveUnder(base: URL, path: string | URL, context: string) {
  if (typeof path !== "string" && !(path instanceof URL)) {
    throw typeError(context, "path", "must be a string or URL", typeof path);
  }
  // A URL's own `href` read first: what it throws is its own. The parser's refusal quotes the whole input (a million
  // characters made a message of a million).
  const text = typeof path === "string" ? path : String(path.href);
  const url = tried(() =>
    typeof path !== "string" || /^[a-z][a-z\d+.-]*:/i.test(text)
      ? new URL(text)
      : new URL(text.replace(/^[/\\]+/, ""), base)
  );
  if (url === undefined) {
    throw typeError(context, "path", "must be a valid URL", text);
  }
  const read = typeof path === "string" &&
    path.replace(/[\t\n\r]/g, "").replace(/^[\0-\x20]+|[\0-\x20]+$/g, "");
  if (read !== false && TIDIED.test(read.split(/[?#]/)[0]!)) {
    const rule = "must hold no backslash and no . or .. segment";
    throw typeError(context, "path", rule, displayUrl(url));
  }
  if (!isUnder(url, base)) {
    const outside = `${displayUrl(url)}, outside ${base.href}`;
    const received = `${outside}; the token is only sent under it`;
    throw typeError(context, "path", "must stay under the base", received);
  }
  return url;
}

/** Resolved paths of one base, up to 256, then cleared (checking was most of a call's cost); a refusal hides `secret`. */
export function pathCache(base: URL, context: string, secret?: string) {
  const resolved = new Map<string, URL>();
  const resolve = (path: string | URL) =>
    secretOutOfChecks(secret, () => resolveUnder(base, path, context));
  return (path: string | URL) => {
    if (typeof path !== "string") return resolve(path);
    let url = resolved.get(path);
    if (url === undefined) {
      url = resolve(path);
      if (resolved.size >= 256) resolved.clear();
      resolved.set(path, url);
    }
    return url;
  };
}

/** Whether `url` is on `base`'s origin, under its path, without user info. */
function isUnder(url: URL, base: URL): boolean {
  return url.origin === base.origin && url.username === "" &&
    url.password === "" && url.pathname.startsWith(base.pathname) &&
    !isRiskyPath(url.pathname);
}

/** Whether a path holds a {@linkcode RISKY_PATH} form, overlong UTF-8, or a lookalike. */
function isRiskyPath(pathname: string): boolean {
  if (RISKY_PATH.test(pathname) || OVERLONG.test(pathname)) return true;
  if (!pathname.includes("%")) return false;
  // The URL parser escapes every non-ASCII character, so each one is here.
  const raw = (run: string) =>
    Uint8Array.from(run.slice(1).split("%"), (hex) => parseInt(hex, 16));
  const decoded = pathname.replace(ESCAPES, (run) => LENIENT.decode(raw(run)));
  return [...decoded.matchAll(LOOKALIKE)].some(([char]) =>
    /[./\\]/.test(char.normalize("NFKC"))
  );
}

/** Where a redirect may be followed with the token: GET and HEAD, under the same base; else `undefined`. */
export function followable(
  response: Response,
  from: URL,
  base: URL,
  method: string,
): URL | undefined {
  const location = response.headers.get("location");
  if (location === null || (method !== "GET" && method !== "HEAD")) return;
  const next = tried(() => new URL(location, from));
  return next !== undefined && isUnder(next, base) ? next : undefined;
}
