// Internal: the characters that move a terminal or show nothing, and text with them shown escaped.

// Controls (C0, DEL, C1), line and paragraph separators, and the characters that show nothing yet hide, reorder or
// spell text: direction marks, zero-width ones, the soft hyphen, invisible operators, interlinear annotation marks, the
// combining grapheme joiner, Hangul fillers, Khmer inherent vowels, the Mongolian vowel separator, tag characters and
// supplementary variation selectors (an England flag's tags are escaped with them). Format characters drawn as signs
// (Arabic number signs, the end of ayah) and the selectors fonts draw variants by (U+FE00 to U+FE0F, U+180B to U+180D,
// U+180F) stay.
/** Every control and invisible character, as a global pattern. */
export const CONTROLS =
  /[\p{Cc}\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0001}\u{e0020}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;

// Written raw, service data could move the cursor, retitle the window, write the clipboard (OSC 52), or hide and
// reorder what a person reads: every control and invisible character is shown escaped.
/** `text` with every control and invisible character shown as `\uXXXX` (a pair of them past U+FFFF, as JSON has it). */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) =>
    Array.from(
      { length: char.length },
      (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`,
    ).join(""));
}
