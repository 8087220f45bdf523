// Internal: a key as text that orders as the key does, so that a database's plain text order (SQLite BINARY,
// PostgreSQL COLLATE "C") reads a copy's rows in the pass's order from an index.

import type { SyncKey } from "./_window.ts";
import { tried } from "../core/_check.ts";

/** Keys after `after` and at or before `upTo`, as texts, in the pass's order (`descending`: newest first); null: open. */
export type KeyRange = {
  readonly after: string | null;
  readonly upTo: string | null;
  readonly descending: boolean;
};

/** A live row of the copy that a cycle has not seen: its id and key text. */
export type UnseenRow = { readonly id: string; readonly key: string };

/** A copy that reads its unseen rows by key range from an index (the SQL sinks): the guard asks it window by window. */
export interface KeyedCopy {
  /**
   * The live rows cycle `cycle` has not seen with keys in `range`, in its order, at most `most`; a row whose key is
   * unknown is keyed by `keyOf` first, the only write (one it cannot key never answered; `signal` stops between pages).
   */
  unseenBetween(
    cycle: number,
    range: KeyRange,
    most: number,
    keyOf: (item: unknown) => SyncKey,
    signal?: AbortSignal,
  ): Promise<UnseenRow[]>;
  /** How many live rows the copy holds (with a key in `range`, when given). Reads only. */
  liveCount(range?: KeyRange): Promise<number>;
}

/** Whether `sink` reads its unseen rows by key range (the SQL sinks whose dialect keys its rows). */
export function isKeyed(sink: object): sink is KeyedCopy {
  return "unseenBetween" in sink && "liveCount" in sink;
}

/**
 * `key` as ASCII text whose order (JS `<`, byte order) is `compareKeys`': a number as "0" and its double's 16 hex digits
 * made monotone, a string as "1" and its UTF-16 code units (`units`); then "\x01" (below every unit) and the id's units.
 */
export function keyText({ value, id }: SyncKey): string {
  const number = typeof value === "number";
  const text = number ? "" : value;
  const out = new Uint8Array(
    2 + (number ? 16 : 5 * text.length) + 5 * id.length,
  );
  out[0] = number ? DIGITS[0]! : DIGITS[1]!;
  let at = number ? digits(out, 1, value) : units(out, 1, text);
  out[at++] = 0x01;
  return ASCII.decode(out.subarray(0, units(out, at, id)));
}

/** The key `text` holds (`keyText`'s inverse): a row's place, for a pass to stand just before it. */
export function keyOfText(text: string): SyncKey {
  const at = text.indexOf("\x01");
  const id = unitsOf(text.slice(at + 1));
  if (text[0] === "1") return { value: unitsOf(text.slice(1, at)), id };
  const ordered = BigInt(`0x${text.slice(1, 17)}`);
  // Positive numbers carry the sign bit set; negative ones were inverted whole (digits).
  const bits = ordered >> 63n ? ordered ^ (1n << 63n) : ~ordered & MASK;
  BITS.setBigUint64(0, bits);
  return { value: BITS.getFloat64(0), id };
}

/** The text `units` wrote as `text`. */
function unitsOf(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const byte = text.charCodeAt(i);
    if (byte !== 0x7f) out += String.fromCharCode(byte - 2);
    else {
      out += String.fromCharCode(parseInt(text.slice(i + 1, i + 5), 16));
      i += 4;
    }
  }
  return out;
}

/**
 * The key text a copy stores for `item`, or null when `keyOf` cannot key it or the text is longer than an index entry
 * holds (PostgreSQL's B-tree: 2,704 bytes): such a row is judged at its cycle's end only, as one without a key.
 */
export function storedKey(keyOf: (item: unknown) => SyncKey, item: unknown) {
  const text = tried(() => keyText(keyOf(item)));
  return text !== undefined && text.length <= MAX_STORED_KEY ? text : null;
}

/** The longest key text stored: 2,000 ASCII bytes, below PostgreSQL's index entry limit with the row's overhead. */
const MAX_STORED_KEY = 2_000;

/** Writes a finite double's bits at `at` as 16 hex digits that order as the numbers do (-0 as 0); where they end. */
function digits(out: Uint8Array, at: number, value: number): number {
  BITS.setFloat64(0, value === 0 ? 0 : value);
  const bits = BITS.getBigUint64(0);
  // Positive: above every negative (sign bit set); negative: every bit inverted, so a larger magnitude sorts lower.
  const ordered = value < 0 ? ~bits & MASK : bits | (1n << 63n);
  const hex = ordered.toString(16).padStart(16, "0");
  for (let i = 0; i < 16; i++) out[at++] = hex.charCodeAt(i); // per row: no string iterator
  return at;
}

/**
 * Writes each UTF-16 code unit of `text` at `at` in order (a prefix sorts first, as in JS); where it ends. A unit below
 * 0x7D is one byte (itself + 2: 0x02 to 0x7E), any other 0x7F and its 4 hex digits: an id of ASCII costs what it is.
 */
function units(out: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x7d) {
      out[at++] = unit + 2;
      continue;
    }
    out[at++] = 0x7f;
    for (let shift = 12; shift >= 0; shift -= 4) {
      out[at++] = DIGITS[(unit >> shift) & 15]!;
    }
  }
  return at;
}

// Built as bytes, decoded once: a key per row of the copy (the guard keys 200,000 at once), 20x a string built char by char.
const DIGITS = new TextEncoder().encode("0123456789abcdef");
const ASCII = new TextDecoder();
const BITS = new DataView(new ArrayBuffer(8));
const MASK = 0xffff_ffff_ffff_ffffn;
