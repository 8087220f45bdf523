// Internal: "did you mean" for flags and variable names.

/**
 * The known word closest to `word`: one it starts, or one within a third of its length in edits; of a letter alone,
 * only the one word it starts in either case (`-V` was "did you mean --to?", two edits away).
 */
export function nearest(word: string, known: readonly string[]) {
  const letter = word.length === 1;
  const start = (text: string) => letter ? text.toLowerCase() : text;
  const prefixed = known.filter((candidate) =>
    start(candidate).startsWith(start(word))
  );
  if (prefixed.length === 1) return prefixed[0];
  if (letter) return undefined;
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const candidate of known) {
    const distance = editDistance(word, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** Edits (a character inserted, removed or replaced) that make `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}
