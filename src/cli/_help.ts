// Internal: the tool's help texts, one per command.

import { VERSION } from "../core/_version.ts";
import { CONFIG_OPTIONAL_VARIABLES, CONFIG_VARIABLES } from "../core/config.ts";

export const NAME = "partner-api";
/** The most pages in flight, as the library allows. */
export const MAX_CONCURRENCY = 64;
/** The largest page: the fake's and syncList's, and larger ones are refused before a token is spent. */
export const MAX_LIMIT = 1000;

export const HELP: Readonly<Record<string, string>> = {
  "": `${NAME} ${VERSION}: tokens, quota and lists of the partner API

Usage: ${NAME} <command> [options]

Commands:
  token          get a token and show its expiry and the quota
  quota          show the quota buckets and when each resets
  list <path>    page through a list, e.g. transactions
  get <path>     one resource, e.g. get cards/ch_000001 --pci (card data)
  sync <list>    keep a copy of a list current: --to copy.db or copy.jsonl
  demo           token, quota and list against an in-process fake service
  cache clear    forget the cached tokens (also: logout)
  completion S   a completion script for bash, zsh or fish

Options:
  -h, --help     help for the tool or a command
  --version      the version
  --no-cache     no token cache: every run requests a token of its own
                 (one token request per run), and remembers nothing
  -v, --verbose  a line per request on standard error, and a failure's causes
  --env-file F   read the configuration from F too (the environment wins);
                 needs read permission on F (deno task cli grants it)
  --token-body json|form            how the token request's body is encoded
                                    (default json, as the service specifies)
  --client-authentication body|basic
                 where the client id and secret go: the body (default) or
                 HTTP Basic, for OAuth servers that take nothing else

Configuration (environment, or --env-file .env):
  ${Object.values(CONFIG_VARIABLES).join("\n  ")}
Optional (the flags above win):
  ${CONFIG_OPTIONAL_VARIABLES.bodyFormat}=json|form
  ${CONFIG_OPTIONAL_VARIABLES.clientAuthentication}=body|basic

The token, the quota and any quota block are cached between runs, encrypted
with a key derived from the client secret, in $PARTNER_API_CACHE_DIR, else
$XDG_CACHE_HOME/partner-api, else $HOME/.cache/partner-api. Without read and
write permission there, the tool runs uncached and says so. A folder that is
not yours alone (a link, another user's, writable by others) is refused.

What each command costs (the token quota is small, per hour and per day):
  token, list, get  nothing while the cached token is valid; else one token request
  quota             nothing when the cache or a 429 knows the quota; else one token request
  demo              nothing: it runs against a fake in this process

Exit codes: 0 done, 1 the service or network failed, 2 bad flags or
configuration, 130 stopped with Ctrl-C, 143 with SIGTERM, 129 with SIGHUP
(a list's output is closed first, a sync commits what it has).
`,
  token: `Usage: ${NAME} token [--show-token] [--format json] [--no-cache]

Shows when the token expires, and the quota. Costs a token request only when
no cached token is valid.
  --show-token   print the token alone on standard output (the summary goes
                 to standard error), e.g. TOKEN=$(${NAME} token --show-token);
                 with --format json, the token is in the object
  --format json  one JSON object: expiresAt, expiresIn, quota, tokenRequests
`,
  quota: `Usage: ${NAME} quota [--format json] [--no-cache]

Shows each quota bucket and when it resets. The token endpoint is the only
place that reports the quota: the tool shows what the cache (or the last 429)
knows, marked with its age, and costs a token request only when it knows
nothing.
`,
  list: `Usage: ${NAME} list <path> [options]

Pages through a list under the API base and prints its items.
  --limit N              items per page, the size of each request, not a
                         total (1 to ${MAX_LIMIT}, default 50; see --max-items)
  --page N               first page (default 1)
  --sort-by FIELD        e.g. creationDate
  --sort-direction DIR   ASC or DESC
  --since FIELD=VALUE    newest first by FIELD (--sort-by FIELD
                         --sort-direction DESC), stopping at the first item
                         older than VALUE: no page after it is requested,
                         e.g. --since creationDate=2026-11-24T00:00:00Z
                         (dates compare as instants, UTC unless zoned)
  --max-items N          stop after N items in all
  --concurrency N        pages in flight, 1 to ${MAX_CONCURRENCY} (default 1); on a
                         list that changes while read, above 1 may skip an
                         item (read it with 1, or keep a copy with sync)
  --query k=v            extra query parameter; repeat for more keys (each once)
  --format F             jsonl, json, csv or table (default: table on a terminal,
                         jsonl otherwise); csv is RFC 4180 with one header
                         line and CRLF (\\r\\n) line ends
  --fields a,b           the columns (keys) to keep, in every format
  --no-cache             no token cache: a token request of its own
Progress goes to standard error when it is a terminal.
`,
  get: `Usage: ${NAME} get <path> [--pci] [--no-cache]

Prints one resource under the API base (with --pci, under the card-data
base): indented JSON on a terminal, the body as it came otherwise. An answer
that is not 2xx prints its status and an excerpt on standard error, exit 1.
  --pci          the card-data base
`,
  sync: `Usage: ${NAME} sync <list> --to copy.db|copy.jsonl [options]

Copies a list into a SQLite or JSONL file and keeps it true on every run: new
items first, then a share of the copy read again (the sweep), which brings in
changed items and items added behind the copy's end, and removes deleted ones
when a cycle completes. A run resumes where a killed one stopped; Ctrl-C
commits what it has (exit 130); a second run on the copy waits for the first.
  --to FILE              the copy: .db, .sqlite, .sqlite3 (SQLite, a table
                         named after the list) or .jsonl, .ndjson
  --id FIELD             the unique id (default: the list's singular + ID,
                         e.g. transactionID)
  --sort-by FIELD        the order read (default: id); new items should come
                         last in it (ASC) or first (DESC)
  --sort-direction D     ASC (default) or DESC (newest first)
  --sweep N|all          list requests each run spends reading the copy's
                         items again (default 10); all: a whole cycle now
  --deletes remove|mark  rows a cycle did not see: removed (default), or
                         given a deleted_at time (SQLite only)
  --max-deletes SHARE    a cycle removes nothing, and fails, past this share
                         of the copy in 24 hours (default 0.1); to confirm,
                         run the command the refusal prints
  --changes              SQLite: keep <table>_changes, one row per change;
                         once it exists, every run records (drop it to stop)
  --priority P           high, low or auto (default low: live calls on the
                         same limiter go first)
  --max-duration T       sweep at the limiter's spare rate for at most T
                         (90s, 10m, 1h); with no --sweep, until the cycle ends
  --limit N              items per page, 1 to ${MAX_LIMIT}; sets the request
                         budget (default 50); pages may be larger, up to what
                         the service accepts
  --concurrency N        windows in flight, 1 to ${MAX_CONCURRENCY} (default 1)
  --query k=v            extra query parameter; repeat for more keys (each once)
  --no-cache             no token cache: a token request of its own
Needs read and write permission on FILE and the files next to it (SQLite
FILE-wal, FILE-shm, FILE-journal); for JSONL, on its folder (each commit goes
through a temporary FILE.checkpoint.json.*.tmp). A progress line goes to
standard error; the last lines say what changed, and how many items are known
to be missing.
`,
  cache: `Usage: ${NAME} cache clear [--env-file F]   (or: ${NAME} logout)

Removes every cached token from the cache folder, or with --env-file F only
that of F's configuration (the environment wins); the next run requests one.
`,
  completion: `Usage: ${NAME} completion bash|zsh|fish

Prints a completion script, e.g.
  ${NAME} completion bash > /etc/bash_completion.d/${NAME}
  ${NAME} completion fish > ~/.config/fish/completions/${NAME}.fish
`,
  demo: `Usage: ${NAME} demo

Starts a fake of the service in this process and runs token, quota and list
against it: no credentials, no network beyond 127.0.0.1, no cache.
`,
};
