// Internal: the key a provider keeps its record under in any store, and the
// key that seals the record by default. Both derive from the client secret.

/** PBKDF2 rounds for a short secret's part of a store key: about 50 ms, once per process. */
const KEY_ROUNDS = 210_000;
/**
 * From this length on a secret is keyed by HKDF, unstretched: a secret the
 * service issues (long and random) cannot be guessed however fast a guess
 * is tested, and a cold start (an edge isolate) should not pay 50 ms for it.
 */
const LONG_SECRET = 32;
const encoder = new TextEncoder();
/** One PBKDF2 derivation per secret and process: every later provider reuses it. */
const derived = new Map<string, Promise<string>>();

/**
 * The key of one client's record: endpoint, audience, client id and the
 * secret's part, so that a wrong secret never shares a right one's token.
 * A secret under {@linkcode LONG_SECRET} characters is stretched with PBKDF2
 * (so that a key name seen in a store does not let anyone test guesses of a
 * weak secret quickly), a longer one derived by HKDF (microseconds). Keys of
 * short secrets are those of 0.3; a long secret's key changed, so its first
 * provider after the upgrade finds no record and requests one token.
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
    await stretched(endpoint.secret),
  ]);
}

/**
 * The AES-GCM key that seals a record by default: HKDF over the store key,
 * whose secret part only the holders of the client secret can compute. The
 * stores name records by a digest of the store key, never by the key itself.
 */
export function sealingKey(key: string): Promise<CryptoKey> {
  return aesKeyFrom(key, "partner-api token record seal v1", "");
}

/** A non-extractable AES-GCM key, derived (HKDF, SHA-256) from `material`. */
export async function aesKeyFrom(
  material: string,
  salt: string,
  info: string,
): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey(
    "raw",
    encoder.encode(material),
    "HKDF",
    false,
    ["deriveKey"],
  );
  return await crypto.subtle.deriveKey(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: encoder.encode(salt),
      info: encoder.encode(info),
    },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** The first `bytes` bytes of the `algorithm` digest of `text`, in hex. */
export async function hexDigest(
  text: string,
  bytes: number,
  algorithm = "SHA-256",
): Promise<string> {
  const digest = await crypto.subtle.digest(algorithm, encoder.encode(text));
  return hex(new Uint8Array(digest).subarray(0, bytes));
}

/** `make(key)`, made once per key (a derivation, a promise of names). */
export function perKey<T>(make: (key: string) => T): (key: string) => T {
  const made = new Map<string, T>();
  return (key) => {
    if (!made.has(key)) made.set(key, make(key));
    return made.get(key)!;
  };
}

async function stretched(secret: string): Promise<string> {
  if (secret.length >= LONG_SECRET) return await hkdf(secret);
  const id = await hexDigest(`partner-api secret id\n${secret}`, 32);
  let result = derived.get(id);
  if (result === undefined) {
    result = pbkdf2(secret);
    derived.set(id, result);
  }
  return await result;
}

function pbkdf2(secret: string): Promise<string> {
  return derivedBits(secret, {
    name: "PBKDF2",
    salt: encoder.encode("partner-api token store key v2"),
    iterations: KEY_ROUNDS,
  });
}

/** A long secret's part: HKDF (SHA-256), unstretched, salted apart from the seal's. */
function hkdf(secret: string): Promise<string> {
  return derivedBits(secret, {
    name: "HKDF",
    salt: encoder.encode("partner-api token store key v3"),
    info: new Uint8Array(),
  });
}

/** 16 bytes derived (SHA-256) from `secret` by `algorithm`, in hex. */
async function derivedBits(
  secret: string,
  algorithm: Omit<Pbkdf2Params, "hash"> | Omit<HkdfParams, "hash">,
): Promise<string> {
  const material = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    algorithm.name,
    false,
    ["deriveBits"],
  );
  const bits = await crypto.subtle.deriveBits(
    { ...algorithm, hash: "SHA-256" },
    material,
    128,
  );
  return hex(new Uint8Array(bits));
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0"))
    .join("");
}
