// Internal: the `get` command: one resource under the API base (or the
// card-data base with --pci), its body on standard output.

import type { Session } from "./_session.ts";
import { readBounded } from "../core/_attempt_loop.ts";
import { serverText } from "../core/_redact.ts";
import { escapeControls } from "./_render.ts";

/** The largest body `get` prints. */
const MAX_BODY = 32 * 1024 * 1024;
const EXCERPT = 300;

/** An answer that is not 2xx: exit code 1, with the status and an excerpt. */
export class GetFailed extends Error {
  override readonly name = "GetFailed";
}

/**
 * Prints the body: pretty JSON on a terminal (raw text when it is not
 * JSON), the bytes as they came otherwise.
 *
 * @throws {GetFailed} For an answer that is not 2xx.
 */
export async function runGet(
  session: Session,
  path: string,
  pci: boolean,
): Promise<void> {
  const { client, io } = session;
  const response = await (pci ? client.pciFetch(path) : client.fetch(path));
  const text = await readBounded(response, MAX_BODY);
  if (text === undefined) {
    throw new GetFailed(`the answer is over ${MAX_BODY} bytes`);
  }
  const where = new URL(response.url || path, "http://x").pathname;
  if (!response.ok) {
    const excerpt = serverText(text, []).slice(0, EXCERPT);
    throw new GetFailed(
      `GET ${where} answered ${response.status}${
        excerpt ? `: ${excerpt}` : ""
      }`,
    );
  }
  if (!io.stdout.isTerminal) return io.stdout.write(text);
  // Escaped line by line: the layout's line breaks stay.
  const lines = pretty(text).split("\n").map(escapeControls);
  io.stdout.write(`${lines.join("\n")}\n`);
}

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
