// Internal: --env-file, read by the tool itself so that an installed
// partner-api can use a .env file. Dotenv lines: KEY=VALUE, optionally
// `export`, quoted or not, `#` comments; no expansion. The environment wins.

import { UsageError } from "./_plan.ts";

/** The variables of a dotenv text. */
export function parseEnvFile(text: string): Map<string, string> {
  const variables = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(
      line,
    );
    if (match === null) continue;
    variables.set(match[1]!, unquote(match[2]!));
  }
  return variables;
}

function unquote(value: string): string {
  const quote = value[0];
  if ((quote === '"' || quote === "'") && value.length > 1) {
    const end = value.indexOf(quote, 1);
    if (end > 0) {
      const inner = value.slice(1, end);
      return quote === '"' ? inner.replaceAll("\\n", "\n") : inner;
    }
  }
  // Unquoted: a comment starts at " #".
  return value.replace(/\s+#.*$/, "");
}

/**
 * `env` with the file's variables under it.
 *
 * @throws {UsageError} When the file cannot be read (named, with the
 * permission to add when that is why).
 */
export async function withEnvFile(
  env: (name: string) => string | undefined,
  path: string,
  read: (path: string) => Promise<string>,
): Promise<(name: string) => string | undefined> {
  let text: string;
  try {
    text = await read(path);
  } catch (error) {
    const denied = (error as Error).name === "NotCapable" ||
      (error as Error).name === "PermissionDenied";
    throw new UsageError(
      denied
        ? `cannot read --env-file ${path}: run with --allow-read=${path}`
        : `cannot read --env-file ${path} (${(error as Error).name})`,
    );
  }
  const file = parseEnvFile(text);
  return (name) => env(name) ?? file.get(name);
}
