// Internal: reading an answer's body with a bound, shared by the token
// endpoint (64 KiB) and list pages (32 MiB).

/**
 * Reads at most `max` bytes of `response`'s body as text. A larger body
 * (declared, or found while reading) is cancelled without reading the rest,
 * and gives `undefined`. A body cut off rejects with the reader's error.
 */
export async function readBounded(
  response: Response,
  max: number,
): Promise<string | undefined> {
  const declared = Number(response.headers.get("content-length") ?? 0);
  // A body of a declared length ends there, unless the runtime inflates it
  // (content-encoding) or the length is not what frames it (a chunked
  // transfer-encoding wins over it): then the runtime may read it whole, its
  // own fast way (the reader's stream steps showed in a list's profile).
  const { headers } = response;
  if (
    declared > 0 && declared <= max && !headers.has("content-encoding") &&
    !headers.has("transfer-encoding")
  ) {
    return await response.text();
  }
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = declared > max ? declared : 0;
  try {
    while (size <= max) {
      const read = await reader.read();
      if (read.done) return new TextDecoder().decode(concat(chunks, size));
      size += read.value.byteLength;
      chunks.push(read.value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  }
  reader.cancel().catch(() => {});
  return undefined;
}

/** The bytes of `chunks`, `size` in all, as one array. */
function concat(
  chunks: readonly Uint8Array[],
  size: number,
): Uint8Array {
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return all;
}
