// A record's key in any store, and the key that seals it by default: both derive from the secret.

import { hex, UTF8 } from "../core/_encoding.ts";

/** PBKDF2 rounds for a short secret's part of a store key: about 50 ms, once per process. */
const KEY_ROUNDS = 210_000;
/** From this length on a secret (one the service issues) is keyed by HKDF, unstretched: no guess can find it. */
const LONG_SECRET = 32;

/** One client's record key: endpoint, audience, client id and the secret's part (a short one stretched by PBKDF2). */
export async function storeKey({ url, audience, clientId, secret }: {
  readonly url: URL;
  readonly audience: string;
  readonly clientId: string;
  readonly secret: string;
}): Promise<string> {
  let part: Promise<string>;
  if (secret.length >= LONG_SECRET) {
    // Unstretched, salted apart from the seal's.
    part = derivedBits(secret, {
      name: "HKDF",
      salt: UTF8.encode("partner-api token store key v3"),
      info: new Uint8Array(),
    });
  } else {
    // One PBKDF2 derivation per secret and process: later providers reuse it.
    const id = await hexDigest(`partner-api secret id\n${secret}`, 32);
    part = derived.get(id) ?? derivedBits(secret, {
      name: "PBKDF2",
      salt: UTF8.encode("partner-api token store key v2"),
      iterations: KEY_ROUNDS,
    });
    derived.set(id, part);
  }
  return JSON.stringify([url.href, audience, clientId, await part]);
}

/** A non-extractable AES-GCM key, derived (HKDF, SHA-256) from `material`. */
export async function aesKeyFrom(material: string, salt: string, info: string) {
  const hkdf = { name: "HKDF", hash: "SHA-256", salt: UTF8.encode(salt) };
  return await crypto.subtle.deriveKey(
    { ...hkdf, info: UTF8.encode(info) },
    await rawKey(material, "HKDF", "deriveKey"),
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
  const digest = await crypto.subtle.digest(algorithm, UTF8.encode(text));
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

/** A record's name and its lease's in a store, from the digest of the record's key: made once per key. */
export function entryNames<Name>(
  nameOf: (digest: string, entry: "record" | "lease") => Name,
): (key: string) => Promise<{ record: Name; lease: Name }> {
  return perKey(async (key) => {
    const digest = await hexDigest(key, 16);
    return { record: nameOf(digest, "record"), lease: nameOf(digest, "lease") };
  });
}

/** Per secret (by its digest), its PBKDF2 derivation. */
const derived = new Map<string, Promise<string>>();

/** 16 bytes derived (SHA-256) from `secret` by `algorithm`, in hex. */
async function derivedBits(
  secret: string,
  algorithm: Omit<Pbkdf2Params, "hash"> | Omit<HkdfParams, "hash">,
): Promise<string> {
  const bits = await crypto.subtle.deriveBits(
    { ...algorithm, hash: "SHA-256" },
    await rawKey(secret, algorithm.name, "deriveBits"),
    128,
  );
  return hex(new Uint8Array(bits));
}

function rawKey(
  material: string,
  algorithm: string,
  usage: "deriveKey" | "deriveBits",
): Promise<CryptoKey> {
  const bytes = UTF8.encode(material);
  return crypto.subtle.importKey("raw", bytes, algorithm, false, [usage]);
}
