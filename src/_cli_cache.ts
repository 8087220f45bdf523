// Internal: the command-line tool's token cache: a TokenStore on one
// encrypted file per client, so that repeated runs cost one token per token
// lifetime. A file on disk rather than Deno KV: it needs no --unstable-kv and
// no configuration, so it also works when the tool runs straight from the
// registry, where the package's deno.json does not apply.

import type { TokenRecord, TokenStore } from "./token.ts";
import { CACHE_VARIABLES } from "./_cli_plan.ts";

/** The cache, or why there is none (one line for standard error). */
export type CacheOpening =
  | { readonly store: TokenStore; readonly notice?: undefined }
  | { readonly store?: undefined; readonly notice: string };

const encoder = new TextEncoder();

/**
 * Opens the cache folder for a client with `clientSecret`, if this process
 * may read and write it. Never prompts for a permission: a permission not
 * granted means running uncached, said once.
 */
export function openCache(clientSecret: string): CacheOpening {
  const folder = cacheFolder();
  if (folder === undefined) {
    return {
      notice:
        `running without the token cache: set PARTNER_API_CACHE_DIR (or allow reading HOME) to keep the token between runs`,
    };
  }
  for (const name of ["read", "write"] as const) {
    if (
      Deno.permissions.querySync({ name, path: folder }).state !== "granted"
    ) {
      return {
        notice:
          `running without the token cache: no ${name} permission for ${folder} (add --allow-read=${folder} --allow-write=${folder})`,
      };
    }
  }
  return { store: new EncryptedFileStore(folder, clientSecret) };
}

/** $PARTNER_API_CACHE_DIR, else $XDG_CACHE_HOME/partner-api, else $HOME/.cache/partner-api. */
function cacheFolder(): string | undefined {
  const [own, xdg, home] = CACHE_VARIABLES.map(readable);
  if (own) return own;
  if (xdg) return `${xdg}/partner-api`;
  if (home) return `${home}/.cache/partner-api`;
  return undefined;
}

function readable(variable: string): string | undefined {
  const allowed =
    Deno.permissions.querySync({ name: "env", variable }).state === "granted";
  return allowed ? Deno.env.get(variable) || undefined : undefined;
}

/**
 * One file per store key, sealed with AES-GCM under a key derived (HKDF) from
 * the client secret and bound to the store key: the file alone reveals
 * nothing, and a changed secret cannot read it (it starts afresh).
 */
class EncryptedFileStore implements TokenStore {
  readonly #folder: string;
  readonly #secret: string;

  constructor(folder: string, secret: string) {
    this.#folder = folder;
    this.#secret = secret;
  }

  async get(key: string): Promise<TokenRecord | undefined> {
    let sealed: Uint8Array<ArrayBuffer>;
    try {
      sealed = await Deno.readFile(await this.#path(key));
    } catch {
      return undefined; // none yet, or unreadable: as if absent
    }
    try {
      const plain = await crypto.subtle.decrypt(
        {
          name: "AES-GCM",
          iv: sealed.subarray(0, 12),
          additionalData: encoder.encode(key),
        },
        await this.#key(key),
        sealed.subarray(12),
      );
      return JSON.parse(new TextDecoder().decode(plain));
    } catch {
      return undefined; // another secret, or tampered with
    }
  }

  async set(key: string, record: TokenRecord): Promise<void> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: encoder.encode(key) },
        await this.#key(key),
        encoder.encode(JSON.stringify(record)),
      ),
    );
    const path = await this.#path(key);
    await Deno.mkdir(this.#folder, { recursive: true, mode: 0o700 });
    // Written whole, then renamed: a run killed midway leaves the old file.
    const partial = `${path}.${crypto.randomUUID()}.partial`;
    await Deno.writeFile(partial, concat(iv, sealed), { mode: 0o600 });
    await Deno.rename(partial, path);
  }

  async discard(key: string, accessToken: string): Promise<void> {
    const record = await this.get(key);
    if (record?.token?.accessToken !== accessToken) return;
    const { token: _dropped, ...rest } = record;
    await this.set(key, rest);
  }

  async #path(key: string): Promise<string> {
    return `${this.#folder}/${(await sha256(key)).slice(0, 32)}.token`;
  }

  async #key(key: string): Promise<CryptoKey> {
    const material = await crypto.subtle.importKey(
      "raw",
      encoder.encode(this.#secret),
      "HKDF",
      false,
      ["deriveKey"],
    );
    return await crypto.subtle.deriveKey(
      {
        name: "HKDF",
        hash: "SHA-256",
        salt: encoder.encode("partner-api cli token cache v1"),
        info: encoder.encode(key),
      },
      material,
      { name: "AES-GCM", length: 256 },
      false,
      ["encrypt", "decrypt"],
    );
  }
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const all = new Uint8Array(a.length + b.length);
  all.set(a);
  all.set(b, a.length);
  return all;
}
