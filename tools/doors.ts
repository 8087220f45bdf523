// The house's door figures (issue 39, "one door per part"): what a part
// shows the others and its users, counted from the code.
//
//   deno run --allow-read=. --allow-run=deno tools/doors.ts
//
// It prints four figures, each with what it counts:
// - public declarations in `_` files: a name an entry of deno.json exports
//   (as `deno doc --json` of all entries together sees it) whose declaration
//   sits in a file whose name starts with `_`;
// - names exported from more than one entry besides the root (`.`);
// - modules that reach into another part's `_` files. A part is a folder of
//   src/ (src/token, src/client, ...); the root mod.ts is a part of its own.
//   src/core's `_` files are the shared kernel every part may use (redaction,
//   option errors, abort and retry helpers), so reaching into them does not
//   count;
// - `core/` files that name a store: a string literal naming one ("redis",
//   "kv", ...) or an import from src/store, outside comments (a doc example
//   may use a store; a type may not).
//
// It exits 1 when a figure in LIMITS is above its limit. The lead switches
// each on as the work that brings it down lands.

/** The figures this check prints. */
export type Figure =
  | "underscoreDeclarations"
  | "sharedNames"
  | "reachesIn"
  | "coreStores";

/**
 * The figures that fail the check, and the most each may be (DESIGN, round 5,
 * "A house you can trust"). Each is switched on once the branches that bring
 * it down have landed; until then it is printed only.
 */
export const LIMITS: Partial<Record<Figure, number>> = {
  coreStores: 0,
  reachesIn: 0,
  underscoreDeclarations: 0,
  // Not 0: every entry must pass `deno doc --lint` alone, so it re-exports
  // the types its signatures name, and DESIGN fixes signatures that name one
  // vocabulary in several entries (the provider's and the client's onEvent,
  // every store's TokenStore, the fleet limiters' RateLimiter). A ratchet:
  // a new shared name fails the check.
  sharedNames: 35,
};

/** The part of the house a module belongs to: `core`, `token`, ..., or `root`. */
export function partOf(path: string): string {
  const match = /^src\/([^/]+)\//.exec(path);
  return match?.[1] ?? "root";
}

/** Whether `path` names an internal (`_`) file. */
export function isInternal(path: string): boolean {
  return (path.split("/").pop() ?? "").startsWith("_");
}

/** One thing a figure counts. */
export interface Finding {
  /** What is counted, e.g. a name or a module. */
  readonly what: string;
  /** Where, e.g. `src/token/_options.ts:83`. */
  readonly where: string;
}

/** The shape of `deno doc --json` this check reads. */
export interface DocJson {
  readonly nodes: Record<string, {
    readonly symbols?: readonly {
      readonly name: string;
      readonly declarations?: readonly {
        readonly location?: {
          readonly filename: string;
          readonly line: number;
        };
      }[];
    }[];
  }>;
}

/**
 * Public names (of any entry) that `deno doc` places in a `_` file, once
 * each, with every such place: a declaration there, or a re-export there
 * (which is where a user's documentation then points).
 */
export function underscoreDeclarations(
  doc: DocJson,
  root: string,
): Finding[] {
  const found = new Map<string, Set<string>>();
  for (const node of Object.values(doc.nodes)) {
    for (const symbol of node.symbols ?? []) {
      for (const { location } of symbol.declarations ?? []) {
        if (location === undefined) continue;
        const file = relative(location.filename, root);
        if (!isInternal(file)) continue;
        if (!found.has(symbol.name)) found.set(symbol.name, new Set());
        found.get(symbol.name)!.add(`${file}:${location.line}`);
      }
    }
  }
  return [...found].map(([what, at]) => ({
    what,
    where: [...at].sort().join(" "),
  })).sort(byWhere);
}

/**
 * Names exported from more than one entry besides the root (DESIGN, round 5:
 * "a name in at most one entry besides the root"), with the entries that
 * export each.
 */
export function sharedNames(
  doc: DocJson,
  entries: Record<string, string>,
  root: string,
): Finding[] {
  const byFile = new Map(
    Object.entries(entries).map(([entry, file]) => [
      file.replace(/^\.\//, ""),
      entry,
    ]),
  );
  const homes = new Map<string, Set<string>>();
  for (const [url, node] of Object.entries(doc.nodes)) {
    const entry = byFile.get(relative(url, root)) ?? relative(url, root);
    for (const { name } of node.symbols ?? []) {
      if (!homes.has(name)) homes.set(name, new Set());
      homes.get(name)!.add(entry);
    }
  }
  const besidesRoot = (at: Set<string>) => at.size - (at.has(".") ? 1 : 0);
  return [...homes].filter(([, at]) => besidesRoot(at) > 1)
    .map(([name, at]) => ({ what: name, where: [...at].sort().join(" ") }))
    .sort((a, b) => a.what.localeCompare(b.what));
}

/**
 * Modules that import or re-export another part's `_` file (src/core's
 * excepted: the shared kernel). `sources` maps a path from the repository's
 * root to the module's text.
 */
export function reachesIn(sources: ReadonlyMap<string, string>): Finding[] {
  const found: Finding[] = [];
  for (const [path, text] of sources) {
    const targets = importsOf(path, text).filter((target) => {
      const part = partOf(target);
      return isInternal(target) && part !== partOf(path) && part !== "core";
    });
    if (targets.length > 0) {
      found.push({ what: [...new Set(targets)].join(" "), where: path });
    }
  }
  return found.sort(byWhere);
}

/** Store names a `core/` module may not use outside comments. */
const STORE_NAMES =
  /(["'`])(redis|kv|deno-kv|memory|file|postgres|sqlite)\1|from\s+["'][^"']*\/store\//;

/** `core/` modules that name a store, with the first line that does. */
export function coreStores(sources: ReadonlyMap<string, string>): Finding[] {
  const found: Finding[] = [];
  for (const [path, text] of sources) {
    if (partOf(path) !== "core") continue;
    const lines = withoutComments(text).split("\n");
    const line = lines.findIndex((code) => STORE_NAMES.test(code));
    if (line >= 0) {
      found.push({ what: lines[line]!.trim(), where: `${path}:${line + 1}` });
    }
  }
  return found.sort(byWhere);
}

/** The repository paths a module imports or re-exports (relative specifiers only). */
export function importsOf(path: string, text: string): string[] {
  const specifiers = withoutComments(text).matchAll(
    /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g,
  );
  const base = new URL(path, "file:///");
  return [...specifiers].map(([, specifier]) =>
    new URL(specifier!, base).pathname.slice(1)
  );
}

/** The text with its comments blanked (line breaks kept), strings left alone. */
export function withoutComments(text: string): string {
  return text.replace(
    /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)|\/\*[\s\S]*?\*\/|\/\/[^\n]*/g,
    (match, literal) => literal ?? match.replace(/[^\n]/g, " "),
  );
}

function relative(url: string, root: string): string {
  return url.startsWith(root) ? url.slice(root.length) : url;
}

function byWhere(a: Finding, b: Finding): number {
  return a.where.localeCompare(b.where) || a.what.localeCompare(b.what);
}

/** The figures of the house at the current directory. */
export async function measure(): Promise<Record<Figure, Finding[]>> {
  const entries = JSON.parse(await Deno.readTextFile("deno.json"))
    .exports as Record<string, string>;
  const { stdout, success } = await new Deno.Command("deno", {
    args: ["doc", "--json", ...new Set(Object.values(entries))],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!success) throw new Error("deno doc --json failed");
  const doc = JSON.parse(new TextDecoder().decode(stdout)) as DocJson;
  const root = `${new URL(`file://${Deno.cwd()}/`).href}`;
  const sources = await readSources(["mod.ts", "src"]);
  return {
    underscoreDeclarations: underscoreDeclarations(doc, root),
    sharedNames: sharedNames(doc, entries, root),
    reachesIn: reachesIn(sources),
    coreStores: coreStores(sources),
  };
}

async function readSources(paths: string[]): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  const visit = async (path: string): Promise<void> => {
    const info = await Deno.stat(path);
    if (info.isFile) {
      if (path.endsWith(".ts")) {
        sources.set(path, await Deno.readTextFile(path));
      }
      return;
    }
    for await (const entry of Deno.readDir(path)) {
      await visit(`${path}/${entry.name}`);
    }
  };
  for (const path of paths) await visit(path);
  return sources;
}

const TITLES: Record<Figure, string> = {
  underscoreDeclarations: "public declarations in `_` files",
  sharedNames: "names exported from more than one entry besides the root",
  reachesIn:
    "modules reaching into another part's `_` files (src/core's `_` files are the shared kernel: not counted)",
  coreStores: "core/ files naming a store",
};

/** The report's lines, and whether every switched-on figure is within its limit. */
export function report(
  figures: Record<Figure, Finding[]>,
  limits: Partial<Record<Figure, number>> = LIMITS,
): { lines: string[]; ok: boolean } {
  const lines: string[] = [];
  let ok = true;
  for (const figure of Object.keys(TITLES) as Figure[]) {
    const findings = figures[figure];
    const limit = limits[figure];
    const over = limit !== undefined && findings.length > limit;
    if (over) ok = false;
    const verdict = limit === undefined
      ? "(not checked yet)"
      : over
      ? `FAIL: at most ${limit}`
      : `ok: at most ${limit}`;
    lines.push(`${findings.length}  ${TITLES[figure]}  ${verdict}`);
    for (const { what, where } of findings) {
      lines.push(`     ${where}  ${what}`);
    }
  }
  return { lines, ok };
}

if (import.meta.main) {
  const { lines, ok } = report(await measure());
  console.log(lines.join("\n"));
  if (!ok) Deno.exit(1);
}
