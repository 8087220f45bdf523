// Internal: --env-file, read by the tool itself so an installed partner-api can use a .env file. Dotenv lines:
// KEY=VALUE, optionally `export`, quoted or not, `#` comments; no expansion. The environment wins.

import { readBounded } from "../core/_attempt_loop.ts";
import { isPermissionError } from "../core/_cause.ts";
import { allowFlags, UsageError } from "./_flag_values.ts";

/** The largest --env-file read: a dotenv file is a few lines. */
const MAX_ENV_FILE = 64 * 1024;

const ENV_LINE = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/;

export function parseEnvFile(text: string): Map<string, string> {
  // A blank line or a `#` comment matches no KEY=VALUE.
  const lines = text.split(/\r?\n/).map((line) => ENV_LINE.exec(line.trim()));
  return new Map(
    lines.filter((match) => match !== null)
      .map((match) => [match[1]!, unquote(match[2]!)] as const),
  );
}

function unquote(value: string): string {
  const quote = value[0];
  const end = quote === '"' || quote === "'" ? value.indexOf(quote, 1) : -1;
  if (end > 0) {
    const inner = value.slice(1, end);
    return quote === '"' ? inner.replaceAll("\\n", "\n") : inner;
  }
  // Unquoted: a comment starts at " #".
  return value.replace(/\s+#.*$/, "");
}

/** `env` with the file's variables under it; a file it cannot read is a UsageError. */
export async function withEnvFile(
  env: (name: string) => string | undefined,
  path: string,
  read: (path: string) => Promise<string>,
): Promise<(name: string) => string | undefined> {
  // An empty path names no file (read, it failed in no useful words).
  if (path === "") throw new UsageError("--env-file needs a file path");
  const text = await read(path).catch((error) => {
    if (error instanceof UsageError) throw error; // readEnvFile's own words
    throw new UsageError(
      isPermissionError(error)
        ? `cannot read --env-file ${path}: run with ${
          allowFlags(["read"], path)
        }`
        : `cannot read --env-file ${path} (${(error as Error).name})`,
    );
  });
  const file = parseEnvFile(text);
  return (name) => {
    try {
      return env(name) ?? file.get(name);
    } catch (error) {
      // Not allowed to read it from the environment: the file may hold it.
      if (file.has(name)) return file.get(name);
      throw error;
    }
  };
}

/**
 * The text of `path`, if a regular file (or a link to one) of at most {@linkcode MAX_ENV_FILE} bytes, also while read:
 * anything else is refused before it is read (a FIFO would hang the run, /dev/zero fill its memory).
 * @throws {UsageError} For such a file, or where Deno is not; else what `Deno.stat` and reading throw.
 */
export async function readEnvFile(path: string): Promise<string> {
  const refused = (why: string) =>
    new UsageError(`cannot read --env-file ${path}: ${why}`);
  if (typeof Deno === "undefined") {
    throw refused("off Deno, pass main an io whose readTextFile reads it");
  }
  const notSmallFile = () =>
    refused(`not a regular file of at most ${MAX_ENV_FILE} bytes`);
  const info = await Deno.stat(path);
  if (!info.isFile || info.size > MAX_ENV_FILE) throw notSmallFile();
  // The stream closes the file, read to its end or cancelled past the bound.
  const { readable } = await Deno.open(path, { read: true });
  const text = await readBounded(new Response(readable), MAX_ENV_FILE);
  if (text === undefined) throw notSmallFile();
  return text;
}
