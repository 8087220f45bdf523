// The public face of the command-line tool's I/O, so that code (and tests) can run it with their own.

/**
 * What the tool reads and writes; {@linkcode main} uses the process's own by default.
 *
 * @example Running the tool with a fixed environment: every missing variable is named at once
 * ```ts
 * import { CONFIG_VARIABLES } from "@partner-api/client";
 * import { type CliIo, main } from "@partner-api/client/cli";
 * import { equal, ok } from "node:assert/strict";
 *
 * let err = "";
 * const io: CliIo = {
 *   env: () => undefined,
 *   stdout: { isTerminal: false, write: () => {} },
 *   stderr: { isTerminal: false, write: (text) => void (err += text) },
 * };
 * equal(await main(["token"], io), 2); // a configuration error, before any request
 * ok(Object.values(CONFIG_VARIABLES).every((name) => err.includes(name)));
 * ```
 */
export interface CliIo {
  /** Reads an environment variable; `undefined` when unset. */
  env(name: string): string | undefined;
  /** Standard output: results. */
  stdout: CliWriter;
  /** Standard error: messages and progress. */
  stderr: CliWriter;
}

/**
 * Where the tool writes: standard output or error, or a test's capture.
 *
 * @example A writer that collects output
 * ```ts
 * import { type CliWriter, main } from "@partner-api/client/cli";
 * import { equal, match } from "node:assert/strict";
 *
 * const lines: string[] = [];
 * const writer: CliWriter = { isTerminal: false, write: (text) => void lines.push(text) };
 * equal(await main(["--version"], { env: () => undefined, stdout: writer, stderr: writer }), 0);
 * match(lines.join(""), /^partner-api \d/);
 * ```
 */
export interface CliWriter {
  /** Writes `text` as it is. */
  write(text: string): void;
  /** Whether a person is watching (a terminal), which decides formats and progress. */
  readonly isTerminal: boolean;
}
