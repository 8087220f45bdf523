// Internal: the tokens a token endpoint's answer holds, to hide them from every text of it (its errors, its quota
// buckets' names), however the answer writes them.

import { redactable } from "../core/_secret_runs.ts";
import { tried } from "../core/_check.ts";

/**
 * The values of `access_token`, `refresh_token` and `id_token` in `text` (cut short too) or in JSON it quotes (`\"` or
 * `\u0022` for its quotes), a name's characters as `\u00XX` too, each read once as JSON reads it. All of them: a cap
 * let decoys push the real one out (one redactor is made for all: one each cost 50 s for 2,400 in 62 KB).
 */
export function answerTokens(text: string, depth = 0): string[] {
  const unquoted = text.replace(/\\(["\\])/g, "$1");
  const unescaped = text.replace(/\\u0022/gi, '"').replace(/\\u005c/gi, "\\");
  const texts = [text, unquoted, unescaped];
  const found = texts.flatMap((it) => [...it.matchAll(TOKEN_FIELD)]);
  const values = found.map((match) => tried(() => JSON.parse(match[1]!)));
  // JSON quoted in a string of the answer, twice or with escapes mixed (`\u0022` and `\"`), read as parsed.
  const nested = depth < MAX_DEPTH
    ? quotedJson(text).flatMap((quoted) => answerTokens(quoted, depth + 1))
    : [];
  return [...new Set([...values, ...nested])]
    .filter((token): token is string =>
      typeof token === "string" && redactable(token)
    );
}

/** How many times JSON quoted in JSON is read: a token endpoint's error quoting a request that quoted another. */
const MAX_DEPTH = 3;

/** The strings of `text` parsed as JSON that may hold a token field (walked without recursion: any depth of arrays). */
function quotedJson(text: string): string[] {
  const strings: string[] = [], left = [tried(() => JSON.parse(text))];
  while (left.length > 0) {
    const value = left.pop();
    if (typeof value === "string" && /token|\\u00/i.test(value)) {
      strings.push(value);
    } else if (typeof value === "object" && value !== null) {
      for (const item of Object.values(value)) left.push(item);
    }
  }
  return strings;
}

/** `word` in a JSON string, any character as itself or as `\u00XX` (hex in either case). */
const spelled = (word: string) =>
  [...word].map((char) => {
    const hex = char.charCodeAt(0).toString(16).padStart(4, "0")
      .replace(/[a-f]/g, (digit) => `[${digit}${digit.toUpperCase()}]`);
    return `(?:${char}|\\\\u${hex})`;
  }).join("");

/** A token field's name, then its string value: a name first (one pattern for any name took 6 s on 64 KiB). */
const TOKEN_FIELD = new RegExp(
  `"(?:${["access", "refresh", "id"].map(spelled).join("|")})${
    spelled("_token")
  }"\\s*:\\s*("(?:[^"\\\\]|\\\\.)+")`,
  "g",
);
