// Internal: the key a provider keeps its record under in any store.

/**
 * The key of one client's record: endpoint, audience, client id and a
 * SHA-256 digest of the secret (domain-separated, so it matches no other
 * digest of it), so that a wrong secret never shares a right one's token.
 */
export async function storeKey(endpoint: {
  readonly url: URL;
  readonly audience: string;
  readonly clientId: string;
  readonly secret: string;
}): Promise<string> {
  return JSON.stringify([
    endpoint.url.href,
    endpoint.audience,
    endpoint.clientId,
    await hexDigest(`partner-api token store key\n${endpoint.secret}`, 16),
  ]);
}

/** The first `bytes` bytes of the SHA-256 digest of `text`, in hex. */
export async function hexDigest(text: string, bytes: number): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(text),
  );
  return Array.from(
    new Uint8Array(digest).subarray(0, bytes),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}
