// A client's paged lists: each page one exchange, retried on its own, its body read within the attempt.

import { emit } from "../core/_emit.ts";
import { ApiError } from "../core/errors.ts";
import {
  cut,
  requireFunction,
  requireKnownOptions,
  requireOptions,
  typeError,
} from "../core/_check.ts";
import { type PageRequest, pageSearchParams } from "./paginate.ts";
import {
  flatten,
  PAGE_OPTIONS,
  pageConfig,
  type Walked,
  walkPages,
} from "./_walk.ts";
import type { ListOptions, Page } from "./pages.ts";
import { readBounded } from "../core/_attempt_loop.ts";
import {
  cleanResponse,
  handedBy,
  type Secret,
  secretsOf,
  serverText,
} from "../core/_redact.ts";
import { secretOutOfChecks, withoutSecrets } from "../core/_option_secrets.ts";
import { resolveUnder } from "./_path.ts";
import {
  clientSecret,
  refusalShown,
  type SendContext,
  sendExchange,
} from "./_send.ts";

const CONTEXT = "Cannot list";
const LIST_OPTIONS = [...PAGE_OPTIONS, "items", "query"];
const EXCERPT_LENGTH = 300;
/** The largest page body read; a larger one is refused without reading the rest. */
const MAX_PAGE_BODY = 32 * 1024 * 1024;
const PAGE_PARAMETERS = ["limit", "page", "sortBy", "sortDirection"];

type FetchedPage<T> = Pick<Page<T>, "items" | "request">;

/** A walk over the list at `path` under `base`; options checked at once, the client's credentials out of a refusal. */
function walkUnder<T>(
  context: SendContext,
  base: URL,
  path: string,
  options: ListOptions<T>,
) {
  // A secret pasted into an option, or the path, is hidden as createClient's checks hide it (its id and audience may
  // be a base's words: they stay).
  try {
    return secretOutOfChecks(clientSecret(context), () => {
      // A string is refused, not walked with the defaults; `querry` is named with its nearest.
      requireKnownOptions(options, LIST_OPTIONS, CONTEXT);
      const { items: pick, query, ...pageOptions } = options;
      const url = resolveUnder(base, path, CONTEXT);
      checkListPath(url, base);
      const addressOf = pageAddresses(url, checkQuery(query));
      requireFunction(pick, CONTEXT, "items");
      const config = pageConfig(pageOptions);
      const walk = walkPages<T, FetchedPage<T>>(
        (request) => listPage(context, base, addressOf(request), request, pick),
        config,
      );
      return { walk, config, pathname: url.pathname };
    });
  } catch (error) {
    // A token pasted into the path is hidden as fetch's refusal hides it.
    throw refusalShown(context, error);
  }
}

/**
 * Refuses a path no list is read at: the base itself (it spent a token and a request on a 404); a fragment, never sent,
 * as syncList refuses it (a filter written after '#' by mistake went unapplied); `limit` or `page`, which every page
 * replaces; a sort the service refuses (the path's is kept when no option gives one), checked as the options' is.
 */
function checkListPath(url: URL, base: URL): void {
  const query = url.searchParams;
  const [by, direction] = [query.get("sortBy"), query.get("sortDirection")];
  const held = ["limit", "page"].find((name) => query.has(name));
  const shown = JSON.stringify(`${query}`.slice(0, 80));
  const field = by && cut(by.trimStart().slice(1).trim(), 80); // a field of a million characters made a message of a million
  const hint = field
    ? `: give the options sortBy: "${field}", sortDirection: "DESC"`
    : "";
  const [rule, received] = url.pathname === base.pathname
    ? ["must name a list, e.g. transactions"]
    : url.hash !== ""
    ? ["must hold no fragment", `"${url.hash}"`]
    : held !== undefined
    ? [`must not hold '${held}': give it as the option '${held}'`]
    : by !== null && (by.trim() === "" || by.trimStart().startsWith("-"))
    ? [`must hold a field name as its sortBy${hint}`, shown]
    : direction !== null && direction !== "ASC" && direction !== "DESC"
    ? ["must hold sortDirection ASC or DESC", shown]
    : [];
  if (rule !== undefined) throw typeError(CONTEXT, "path", rule, received);
}

/** The pages of the list at `path` under `base`, as values. */
export function pagesUnder<T>(
  context: SendContext,
  base: URL,
  path: string,
  options: ListOptions<T>,
): AsyncIterableIterator<Page<T>> {
  const { walk, config, pathname } = walkUnder(context, base, path, options);
  const pages = asPages(walk, config.limit);
  if (context.onEvent === undefined) return pages;
  return heard(pages, context, pathname, (page) => page.items.length);
}

/** The items of the list at `path` under `base`. */
export function listUnder<T>(
  context: SendContext,
  base: URL,
  path: string,
  options: ListOptions<T>,
): AsyncIterableIterator<T> {
  const { walk, config, pathname } = walkUnder(context, base, path, options);
  if (context.onEvent === undefined) return flatten(walk, config.signal);
  const tally = { pages: 0 };
  const items = flatten(counted(walk, tally), config.signal);
  return heard(items, context, pathname, () => 1, tally);
}

async function* asPages<T>(
  walk: AsyncIterable<Walked<T, FetchedPage<T>>>,
  limit: number,
): AsyncGenerator<Page<T>, undefined, undefined> {
  for await (const { page, items, fetched } of walk) {
    yield Object.freeze({
      items: Object.freeze(Array.isArray(items) ? items : [...items]),
      page,
      limit,
      request: fetched.request,
    });
  }
}

async function* counted<X>(source: AsyncIterable<X>, tally: { pages: number }) {
  for await (const value of source) {
    tally.pages++;
    yield value;
  }
}

/**
 * Each page's address: the list's with its filters, the page's parameters last in place of the path's sort (neither
 * holds `limit` or `page`). Parsed once a page: a `searchParams.set` per parameter reparsed it, the page's main cost.
 */
function pageAddresses(url: URL, extra: Record<string, string>) {
  let head: string | undefined;
  return (request: PageRequest) => {
    const page = pageSearchParams(request);
    // The sort is the same on every page: the list's address with its filters, less the page's, is made once.
    if (head === undefined) {
      const list = new URL(url);
      Object.entries(extra).forEach(([n, v]) => list.searchParams.set(n, v));
      for (const name of [...page.keys()]) list.searchParams.delete(name);
      const { origin, pathname, search } = list;
      head = `${origin}${pathname}${search === "" ? "?" : `${search}&`}`;
    }
    return new URL(head + page);
  };
}

/** `source`; the client's listener hears how the crawl ended. */
async function* heard<X>(
  source: AsyncIterableIterator<X>,
  { onEvent, now, tokenProvider }: SendContext,
  path: string,
  count: (value: X) => number,
  tally?: { pages: number },
): AsyncIterableIterator<X> {
  const started = now();
  // The tokens its pages are sent with, noted: a secret or token pasted into the path is shown as errors show it.
  const noted = secretsOf({ tokenProvider });
  let pages = 0;
  let items = 0;
  let outcome: "ok" | "error" = "ok";
  try {
    for await (const value of source) {
      pages++;
      items += count(value);
      yield value;
    }
  } catch (error) {
    outcome = "error";
    throw error;
  } finally {
    noted.stop();
    emit(onEvent!, {
      type: "api.list",
      path: withoutSecrets(path, [
        ...handedBy(tokenProvider),
        ...noted.secrets(),
      ]),
      outcome,
      pages: tally?.pages ?? pages,
      items,
      durationMs: now() - started,
    });
  }
}

/** One page of a list, retried on its own; a token failure, and what `items` throws (picked after), stays what it is. */
async function listPage<T>(
  context: SendContext,
  base: URL,
  url: URL,
  { signal, limit, priority }: PageRequest,
  pick: ((body: unknown) => readonly T[]) | undefined,
): Promise<FetchedPage<T>> {
  const [page, body, text] = await sendExchange(context, {
    base,
    kind: "api",
    url,
    init: {
      headers: { accept: "application/json" },
      ...(signal === undefined ? {} : { signal }),
      ...(priority === undefined ? {} : { priority }),
    },
    context: CONTEXT,
    finish: async (response, { secrets }, attempts) => {
      const page: Answered = { url, response, secrets, attempts };
      const text = await readBounded(response, MAX_PAGE_BODY);
      if (text === undefined) {
        throw answered(page, "", `with a body over ${MAX_PAGE_BODY} bytes`);
      }
      return [page, pageBody(page, text), text] as const;
    },
  });
  const items = pick === undefined ? itemsOf(page, body, text) : pick(body);
  if (!Array.isArray(items)) {
    const got = items === null ? "null" : typeof items;
    throw typeError(CONTEXT, "items", "must return an array", got);
  }
  if (items.length > limit) {
    const why = `with ${items.length} items, more than the limit of ${limit}`;
    throw answered(page, "", why);
  }
  const { status } = page.response, { attempts } = page;
  // Its address as its errors show it: a secret or token pasted into the path or a filter redacted.
  const shown = withoutSecrets(url.href, page.secrets);
  return { items, request: Object.freeze({ url: shown, status, attempts }) };
}

/** One answered page, as its errors describe it. */
interface Answered {
  readonly url: URL;
  readonly response: Response;
  /** The token it was sent with, and the client's credentials. */
  readonly secrets: readonly Secret[];
  readonly attempts: number;
}

/** The page's JSON body, or the ApiError that says what the service did. */
function pageBody(page: Answered, text: string): unknown {
  if (!page.response.ok) throw answered(page, text, whatToCheck(page));
  try {
    return JSON.parse(text);
  } catch {
    throw answered(page, text, "with a body that is not JSON");
  }
}

/** What to check after a 404 (the path), or a 401 (why no more tokens were tried: one fresh token an hour). */
function whatToCheck({ url, response }: Answered): string {
  const refused =
    "(the token was refused; a fresh one is asked for after a 401 once an hour at most: check the client's access to the path, or clear the token cache after a fake restarted)";
  if (response.status === 401) return refused;
  if (response.status !== 404) return "";
  return `(no list at ${url.pathname}: the partner API's lists are organizations, transactions and cardholders)`;
}

/** The items of a page body: an array, or the body's only array-valued property. */
function itemsOf(page: Answered, body: unknown, text: string) {
  if (Array.isArray(body)) return body;
  const object = typeof body === "object" && body !== null;
  const arrays = object ? Object.values(body).filter(Array.isArray) : [];
  if (arrays.length === 1) return arrays[0]!;
  // Keys come from the service: cleaned and cut like any server text.
  const found = object ? Object.keys(body).join(", ") : typeof body;
  const keys = serverText(found, page.secrets, EXCERPT_LENGTH);
  const problem = `with no single array of items (found: ${keys})`;
  throw answered(page, text, `${problem}; pass 'items' to pick them`);
}

/** An ApiError for an answer: its status, the problem, the start of the body (token and credentials removed first). */
function answered(page: Answered, text: string, problem: string): ApiError {
  const { url, response, secrets, attempts } = page;
  const bodyExcerpt = serverText(text, secrets, EXCERPT_LENGTH);
  const error = new ApiError(
    `Cannot list: GET ${url.href} answered ${response.status}${
      problem === "" ? "" : ` ${problem}`
    }${bodyExcerpt === "" ? "" : `: ${bodyExcerpt.slice(0, 200)}`}`,
    {
      status: response.status,
      url: url.href,
      bodyExcerpt,
      // Headers are server text too: a token or credential echoed there is redacted.
      response: cleanResponse(response, secrets),
      reason: response.ok ? "malformed" : "status",
      attempts,
    },
  );
  return withoutSecrets(error, secrets);
}

function checkQuery(query: unknown): Record<string, string> {
  if (query === undefined) return {};
  requireOptions(query, CONTEXT, "query");
  for (const [name, value] of Object.entries(query)) {
    const option = `query.${name}`;
    if (typeof value !== "string") {
      throw typeError(CONTEXT, option, "must be a string", typeof value);
    }
    if (PAGE_PARAMETERS.includes(name)) {
      const rule = `must be given as the option '${name}', not in 'query'`;
      throw typeError(CONTEXT, option, rule);
    }
  }
  return query as Record<string, string>;
}
