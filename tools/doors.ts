// The house's door figures (issue 39, "one door per part"): what a part
// shows the others and its users, counted from the code.
//
//   deno run --allow-read=. --allow-run=deno tools/doors.ts
//
// It prints four figures, each with what it counts:
// - public declarations in `_` files: a name an entry of deno.json exports
//   (as `deno doc --json` of all entries together sees it) whose declaration
//   sits in a file whose name starts with `_`;
// - values (functions, classes, constants) exported from more than one entry
//   besides the root (`.`): a value has one home entry. A type may be in
//   several, re-exported (`export type`) by an entry whose own signatures
//   name it, so that the entry passes `deno doc --lint` alone; a class
//   re-exported with `export type` is a type there (no `new`, no
//   `instanceof`);
// - types an entry re-exports that none of its own declarations names
//   (followed through the types they name): such a type has no business in
//   that entry;
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
  | "sharedValues"
  | "strayTypes"
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
  sharedValues: 0,
  strayTypes: 0,
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

/** One exported symbol as `deno doc --json` gives it. */
export interface DocSymbol {
  readonly name: string;
  readonly declarations?: readonly {
    readonly kind?: string;
    readonly location?: {
      readonly filename: string;
      readonly line: number;
    };
    /** The declaration's signature, searched for the type names it uses. */
    readonly def?: unknown;
  }[];
}

/** The shape of `deno doc --json` this check reads. */
export interface DocJson {
  readonly nodes: Record<string, { readonly symbols?: readonly DocSymbol[] }>;
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

/** The entry (`./token`, ...) each module of `doc` is, by deno.json's exports. */
function entryOf(
  entries: Record<string, string>,
  root: string,
): (url: string) => string {
  const byFile = new Map(
    Object.entries(entries).map(([entry, file]) => [
      file.replace(/^\.\//, ""),
      entry,
    ]),
  );
  return (url) => byFile.get(relative(url, root)) ?? relative(url, root);
}

/**
 * Values exported from more than one entry besides the root (DESIGN §2: "a
 * value (function, class, constant) has one home entry, and may also be in
 * the root"), with the entries that export each. `values` maps an entry to
 * the names it exports as values (see {@linkcode valueNames}).
 */
export function sharedValues(
  values: Record<string, ReadonlySet<string>>,
): Finding[] {
  const homes = new Map<string, string[]>();
  for (const [entry, names] of Object.entries(values)) {
    if (entry === ".") continue;
    for (const name of names) {
      homes.set(name, [...homes.get(name) ?? [], entry]);
    }
  }
  return [...homes].filter(([, at]) => at.length > 1)
    .map(([name, at]) => ({ what: name, where: at.sort().join(" ") }))
    .sort((a, b) => a.what.localeCompare(b.what));
}

/**
 * Types an entry besides the root exports that its own declarations do not
 * name (DESIGN §2: "a type may be re-exported by any entry whose own
 * signatures name it"). An entry's own declarations are its values, what its
 * part declares, and the names no other entry besides the root exports; what
 * they name, and what that names in turn, may be there; anything else is
 * stray.
 */
export function strayTypes(
  doc: DocJson,
  entries: Record<string, string>,
  root: string,
): Finding[] {
  const entry = entryOf(entries, root);
  const symbolsOf = new Map<string, DocSymbol[]>();
  const count = new Map<string, number>();
  for (const [url, node] of Object.entries(doc.nodes)) {
    const name = entry(url);
    if (name === ".") continue;
    symbolsOf.set(name, [...node.symbols ?? []]);
    for (const { name: symbol } of node.symbols ?? []) {
      count.set(symbol, (count.get(symbol) ?? 0) + 1);
    }
  }
  const found: Finding[] = [];
  for (const [name, symbols] of symbolsOf) {
    const byName = new Map(symbols.map((symbol) => [symbol.name, symbol]));
    const reached = new Set<string>();
    const visit = (symbol: DocSymbol) => {
      if (reached.has(symbol.name)) return;
      reached.add(symbol.name);
      for (const ref of typeNames(symbol)) {
        const next = byName.get(ref);
        if (next !== undefined) visit(next);
      }
    };
    const part = partOf(relative(entries[name] ?? name, "./"));
    for (const symbol of symbols) {
      const own = symbol.declarations?.some(({ kind, location }) =>
        (kind !== undefined && VALUE_KINDS.has(kind)) ||
        (location !== undefined &&
          partOf(relative(location.filename, root)) === part)
      );
      if (own || count.get(symbol.name) === 1) visit(symbol);
    }
    for (const symbol of symbols) {
      if (!reached.has(symbol.name)) {
        found.push({ what: symbol.name, where: name });
      }
    }
  }
  return found.sort(byWhere);
}

/** Kinds of `deno doc` declarations that are values. */
const VALUE_KINDS = new Set(["function", "class", "variable", "enum"]);

/** The type names a symbol's documentation refers to (`typeName`, a class's `extends`). */
function typeNames(symbol: DocSymbol): Set<string> {
  const names = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== "object") return;
    for (const [key, inner] of Object.entries(value)) {
      if (
        typeof inner === "string" && /^(typeName|extends|typeQuery)$/.test(key)
      ) {
        names.add(inner.split(".")[0]!);
      } else walk(inner);
    }
  };
  for (const declaration of symbol.declarations ?? []) walk(declaration.def);
  return names;
}

/**
 * The names a module exports as values: `export function|class|const|enum`,
 * `export { a, b as c }` (not `type`-marked), and `export *`, followed
 * through re-exports (`read` gives a module's text, or `undefined` for one
 * outside the repository). `export type` exports no value.
 */
export function valueNames(
  path: string,
  read: (path: string) => string | undefined,
): Set<string> {
  const text = read(path);
  const names = new Set<string>();
  if (text === undefined) return names;
  const code = withoutComments(text);
  const target = (specifier: string) =>
    new URL(specifier, new URL(path, "file:///")).pathname.slice(1);
  for (
    const [, name] of code.matchAll(
      /\bexport\s+(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|const|let|var|enum)\s+([\w$]+)/g,
    )
  ) names.add(name!);
  for (
    const [, list, from] of code.matchAll(
      /\bexport\s*\{([^}]*)\}(?:\s*from\s*["']([^"']+)["'])?/g,
    )
  ) {
    const inner = from === undefined
      ? undefined
      : valueNames(target(from), read);
    for (const specifier of list!.split(",").map((part) => part.trim())) {
      if (specifier === "" || /^type\s/.test(specifier)) continue;
      const [local, exported = local] = specifier.split(/\s+as\s+/);
      if (inner === undefined || inner.has(local!)) names.add(exported!);
    }
  }
  for (
    const [, from] of code.matchAll(/\bexport\s*\*\s*from\s*["']([^"']+)["']/g)
  ) {
    for (const name of valueNames(target(from!), read)) names.add(name);
  }
  return names;
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
  const doc = await docJson([...new Set(Object.values(entries))]);
  // Each entry alone, as a user meets it: documented together, a name one
  // entry re-exports from another is only a reference to it there.
  const alone: DocJson = { nodes: {} };
  for (const file of new Set(Object.values(entries))) {
    Object.assign(alone.nodes, (await docJson([file])).nodes);
  }
  const root = `${new URL(`file://${Deno.cwd()}/`).href}`;
  const sources = await readSources(["mod.ts", "src"]);
  const values = Object.fromEntries(
    Object.entries(entries).map(([entry, file]) => [
      entry,
      valueNames(file.replace(/^\.\//, ""), (path) => sources.get(path)),
    ]),
  );
  return {
    underscoreDeclarations: underscoreDeclarations(doc, root),
    sharedValues: sharedValues(values),
    strayTypes: strayTypes(alone, entries, root),
    reachesIn: reachesIn(sources),
    coreStores: coreStores(sources),
  };
}

async function docJson(files: string[]): Promise<DocJson> {
  const { stdout, success } = await new Deno.Command("deno", {
    args: ["doc", "--json", ...files],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!success) throw new Error(`deno doc --json ${files.join(" ")} failed`);
  return JSON.parse(new TextDecoder().decode(stdout)) as DocJson;
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
  sharedValues:
    "values (functions, classes, constants) exported from more than one entry besides the root",
  strayTypes:
    "types an entry besides the root exports that its own declarations do not name",
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
