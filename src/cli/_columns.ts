// Internal: how many columns of a terminal a text takes, to line a table's columns up and cut its cells there.

// Two columns: East Asian wide and fullwidth characters, and emoji drawn as such.
const WIDE =
  /[\p{Emoji_Presentation}\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uA960-\uA97F\uAC00-\uD7A3\uF900-\uFAFF\uFE10-\uFE19\uFE30-\uFE6F\uFF00-\uFF60\uFFE0-\uFFE6\u{16FE0}-\u{16FE4}\u{17000}-\u{18AFF}\u{1B000}-\u{1B16F}\u{1F200}-\u{1F2FF}\u{20000}-\u{3FFFD}]/u;
// None: drawn over the character before (combining marks, a decomposed Korean syllable's vowel and final, skin tones).
// Zero-width spaces and joiners never get here: they are shown escaped.
const NONE = /[\p{Mn}\p{Me}\u1161-\u11FF\u{1F3FB}-\u{1F3FF}]/u;
const PICTURE = /\p{Extended_Pictographic}/u;

/** The columns `char` takes after `before`. */
function widthOf(char: string, before: string): number {
  // U+FE0F draws the symbol before it as an emoji (❤️): two columns where it took one.
  if (char === "\uFE0F") {
    return PICTURE.test(before) && !WIDE.test(before) ? 1 : 0;
  }
  return NONE.test(char) ? 0 : WIDE.test(char) ? 2 : 1;
}

/** `text` in at most `width` columns (when cut, it ends with "…"), and the columns it takes; one walk of it. */
export function fitted(text: string, width: number) {
  let columns = 0, at = 0, before = "", cutAt = -1, cutColumns = 0;
  for (const char of text) {
    const wide = widthOf(char, before);
    if (cutAt < 0 && columns + wide > width - 1) {
      [cutAt, cutColumns] = [at, columns];
    }
    columns += wide;
    if (columns > width) {
      return { text: `${text.slice(0, cutAt)}…`, columns: cutColumns + 1 };
    }
    at += char.length;
    before = char;
  }
  return { text, columns };
}
