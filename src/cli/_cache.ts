// Internal: where the tool keeps its tokens between runs (a file token store of ./store), and whether this run may.

import { clearFileTokenStore, createFileTokenStore } from "../store/mod.ts";
import type { PartnerApiConfig } from "../core/config.ts";
import { allowFlags, UsageError } from "./_flag_values.ts";
import { counted } from "./_render.ts";
import { given, tried } from "../core/_check.ts";

/**
 * Opens the cache folder, if this process may read and write it: never prompts (no permission: uncached, said once).
 * Without `create`, a folder that does not exist is not made (no cache: a failure's line only reads what it holds).
 * @returns The cache, or why there is none (one line for standard error).
 * @throws {UsageError} When the folder is not the user's alone, before any token is requested or waited for.
 */
export function openCache(
  clientSecret: string,
  onNotice: (line: string) => void,
  now: () => number = Date.now,
  create = true,
) {
  const { folder } = cacheLocation(); // a variable it may not read is passed over
  const missing = folder === undefined
    ? "set PARTNER_API_CACHE_DIR (or allow reading HOME) to keep the token between runs"
    : lacking(folder);
  if (missing || folder === undefined) {
    return { notice: `running without the token cache: ${missing}` };
  }
  if (!create && !tried(() => Deno.lstatSync(folder))) {
    return { notice: `no token cache at ${folder}` };
  }
  const refusal = notOwnFolder(folder);
  // Read-only to this run (a mode, a mount): nothing can be kept, and nothing there is read.
  if (refusal === null) {
    return { notice: `running without the token cache: ${unwritable(folder)}` };
  }
  if (refusal !== undefined) {
    throw new UsageError(`${refusal}, or run with --no-cache`);
  }
  // The run's clock, as its provider's: the lock is stamped and judged by it.
  return {
    store: createFileTokenStore({ folder, clientSecret, onNotice, now }),
  };
}

/**
 * Why `folder` is not this user's alone, in one line, or `undefined`; `null` where no file can be made in it (whose it
 * is cannot be told). It is created 0700 if absent; it and every entry must be no link, owned by this user (the owner
 * of a file created there: `Deno.uid()` needs --allow-sys) and writable by nobody else, or another local user could
 * read or plant the token files, or hold their lock.
 */
function notOwnFolder(folder: string): string | null | undefined {
  tried(() => Deno.mkdirSync(folder, { recursive: true, mode: 0o700 }));
  const info = tried(() => Deno.lstatSync(folder));
  if (info === undefined) return undefined; // none could be made: the first write says so
  // Whoever made it, no token could be kept there: each run would pay one.
  if (!info.isDirectory && !info.isSymlink) {
    return refusal(folder, "is not a folder", folder);
  }
  // No probe through a link or into a folder others may write.
  const foreign = problemOf(info, null);
  if (foreign !== undefined) return refusal(folder, foreign, folder);
  const own = ownerOfNewFile(folder);
  if (own === undefined) return null;
  const problem = problemOf(info, own);
  if (problem !== undefined) return refusal(folder, problem, folder);
  for (const entry of Deno.readDirSync(folder)) {
    const path = `${folder}/${entry.name}`;
    const found = tried(() => Deno.lstatSync(path)); // gone meanwhile, or unreadable: nothing found
    const trouble = found && problemOf(found, own);
    if (trouble !== undefined) return refusal(path, trouble, folder);
  }
  return undefined;
}

/** What makes a cache path another's to control, if anything; `own`, the user's id (`null`: not to be judged). */
function problemOf(info: Deno.FileInfo, own: number | null) {
  if (info.isSymlink) return "is a link";
  if (info.mode !== null && (info.mode & 0o022) !== 0) {
    return "is writable by other users";
  }
  // `null` too on a system without owners (Windows).
  if (own !== null && info.uid !== own) {
    return `is owned by another user (uid ${info.uid})`;
  }
  return undefined;
}

/** The one line of a refused cache: what to remove, or which folder to name instead. */
function refusal(path: string, problem: string, folder: string): string {
  const what = path === folder ? "" : " in the token cache folder";
  return `refusing the token cache: ${path}${what} ${problem}; remove it, or set PARTNER_API_CACHE_DIR (or XDG_CACHE_HOME) to a folder of your own`;
}

const unwritable = (folder: string) =>
  `no file can be made in ${folder} (read-only to you)`;

/** The owner of a file this process creates in `folder`, removed at once. */
function ownerOfNewFile(folder: string): number | null | undefined {
  const probe = `${folder}/.owner-${crypto.randomUUID()}.probe`;
  try {
    Deno.writeTextFileSync(probe, "", { createNew: true, mode: 0o600 });
  } catch {
    return undefined;
  }
  try {
    return Deno.lstatSync(probe).uid;
  } finally {
    Deno.removeSync(probe);
  }
}

/** The variables that say where the cache is, in the order they are asked, and where each puts it. */
const CACHE_VARIABLES = [
  ["PARTNER_API_CACHE_DIR", ""],
  ["XDG_CACHE_HOME", "/partner-api"],
  ["HOME", "/.cache/partner-api"],
] as const;

/**
 * The cache folder of the first variable this run may read that is set, and the first before it that it may not read
 * (`unread`: if set, the cache is there).
 */
function cacheLocation(): { folder?: string; unread?: string } {
  let unread: string | undefined;
  for (const [variable, below] of CACHE_VARIABLES) {
    const { state } = Deno.permissions.querySync({ name: "env", variable });
    if (state !== "granted") {
      unread ??= variable;
      continue;
    }
    const value = Deno.env.get(variable);
    if (value) return { folder: `${value}${below}`, ...given({ unread }) };
  }
  return given({ unread });
}

/**
 * `cache clear`, `logout`: the line that says what was removed: every cached token, or those of `config` alone.
 * @throws {UsageError} When it cannot clear: no permission on the folder or the variables naming it, or a folder
 * {@linkcode openCache} would refuse.
 */
export async function clearCache(config?: PartnerApiConfig): Promise<string> {
  // Not allowed to read a variable asked first, the cache may be where it says: clearing another is no answer.
  const { folder, unread } = cacheLocation();
  if (unread !== undefined) {
    const fix = `no env permission for ${unread} (add --allow-env=${unread})`;
    throw new UsageError(`cannot clear the token cache: ${fix}`);
  }
  if (folder === undefined) return "no token cache: nothing to clear";
  // Nothing removed is a failure, not a done.
  const missing = lacking(folder);
  if (missing) throw new UsageError(`cannot clear the token cache: ${missing}`);
  // Refused as every command refuses it (a link, another's folder).
  const refusal = tried(() => Deno.lstatSync(folder)) && notOwnFolder(folder);
  if (refusal === null) {
    throw new UsageError(`cannot clear the token cache: ${unwritable(folder)}`);
  }
  if (refusal) throw new UsageError(refusal);
  const removed = config === undefined
    ? await clearFileTokenStore(folder)
    : Number(
      await createFileTokenStore({ folder, clientSecret: config.clientSecret })
        .forget({ ...config.environment, clientId: config.clientId }),
    );
  const whose = config ? " of this configuration (others kept)" : "";
  return `removed ${counted(removed, "cached token")}${whose} from ${folder}`;
}

/** Read or write, whichever this run may not do in `folder` first, with the flags that allow both; else `undefined`. */
function lacking(folder: string) {
  const names = ["read", "write"] as const;
  const name = names.find((name) =>
    Deno.permissions.querySync({ name, path: folder }).state !== "granted"
  );
  return name &&
    `no ${name} permission for ${folder} (add ${allowFlags(names, folder)})`;
}
