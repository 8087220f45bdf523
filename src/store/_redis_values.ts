// Internal: the Redis token store's values as text: replies of either
// kind (strings, or bytes when a client is asked for them), the sealed
// record as JSON of base64, and what a wake on a lease's stream carries.

/**
 * The entry of an XREAD reply of one (`[[stream, [[id, ["record", value]]]]]`):
 * its id, and the record published with it (none when the lease was let go
 * without one); `undefined` when the wait ended without an entry.
 */
export function entryIn(
  reply: unknown,
): { id: string; record: string | undefined } | undefined {
  const entry = (reply as unknown[][][][] | null)?.[0]?.[1]?.[0];
  const id = Array.isArray(entry) ? text(entry[0]) : undefined;
  if (id === undefined) return undefined;
  const fields = entry![1];
  const value = Array.isArray(fields) ? text(fields[1]) : undefined;
  return { id, record: value === "" ? undefined : value };
}

/** A reply as text: clients answer strings, or bytes when asked to. */
export function text(reply: unknown): string | undefined {
  if (typeof reply === "string") return reply;
  if (reply instanceof Uint8Array) return new TextDecoder().decode(reply);
  return undefined;
}

export function encodeSealed(
  { iv, sealed }: { iv: Uint8Array; sealed: Uint8Array },
): { iv: string; sealed: string } {
  return { iv: toBase64(iv), sealed: toBase64(sealed) };
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}
