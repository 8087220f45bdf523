// Internal: where the command-line tool keeps its tokens between runs (a
// file token store of ./store), and whether this run may use it.

import {
  clearFileTokenStore,
  createFileTokenStore,
  type FileTokenStore,
} from "../store/mod.ts";
import { CACHE_VARIABLES } from "./_plan.ts";

/** The cache, or why there is none (one line for standard error). */
export type CacheOpening =
  | { readonly store: FileTokenStore; readonly notice?: undefined }
  | { readonly store?: undefined; readonly notice: string };

/**
 * Opens the cache folder for a client with `clientSecret`, if this process
 * may read and write it. Never prompts for a permission: a permission not
 * granted means running uncached, said once. Later problems (a file that is
 * not the cache's, a write that fails) go to `notify`, which says each once.
 */
export function openCache(
  clientSecret: string,
  notify: (line: string) => void = () => {},
): CacheOpening {
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
  return {
    store: createFileTokenStore({
      folder,
      clientSecret,
      onNotice: notify,
    }),
  };
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
 * Removes every cached token of the cache folder (`cache clear`, `logout`);
 * returns the line that says what happened.
 */
export async function clearCache(): Promise<string> {
  const folder = cacheFolder();
  if (folder === undefined) return "no token cache: nothing to clear";
  if (
    Deno.permissions.querySync({ name: "write", path: folder }).state !==
      "granted"
  ) {
    return `cannot clear the token cache: no write permission for ${folder} (add --allow-read=${folder} --allow-write=${folder})`;
  }
  const removed = await clearFileTokenStore(folder);
  return `removed ${removed} cached token${
    removed === 1 ? "" : "s"
  } from ${folder}`;
}
