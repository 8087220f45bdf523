// deno task check: no test asserts a duration or a ratio of durations.
//
//   deno run --allow-read=tests tools/timed_assertions.ts [file ...]
//
// A test that asserts how long something took fails on a busy machine for no
// fault of the code: timing goals live in `deno task bench` (tests/*_bench.ts),
// and tests assert counts (429s, tokens, requests, items, sends per window by
// the server's own count). This finds, in every test file but the benches,
// each assertion (ok, equal, assert…) whose arguments compare or subtract a
// reading of a clock (Date.now(), performance.now(), a fake clock's now) or a
// value derived from one, or a duration by its name (elapsed, took, waited,
// duration), or compare with a rate's floor or a ratio. It reads the text, not the types:
// a value derived through a function call is not followed.

/** One assertion that asserts time. */
export interface TimedAssertion {
  /** 1-based line of the assertion's call. */
  readonly line: number;
  /** The call, on one line, cut short. */
  readonly text: string;
  /** Why it counts as timed. */
  readonly why: string;
}

const ASSERTIONS =
  /(?<![\w.$])(ok|assert|equal|strictEqual|notEqual|notStrictEqual|deepStrictEqual|deepEqual|assertEquals|assertNotEquals|assertStrictEquals|assertLess|assertLessOrEqual|assertGreater|assertGreaterOrEqual|assertAlmostEquals|assertExists|expect)\s*\(/g;

/** Reads of the platform's clock. */
const WALL_READ =
  /\b(Date\.now\s*\(\s*\)|performance\.now\s*\(\s*\)|new Date\s*\(\s*\))/;

/** Reads of any clock: the platform's, or a fake's or a hand-moved one's. */
const CLOCK_READ = new RegExp(
  `${WALL_READ.source}|\\b(timers\\.now\\b|clock\\s*\\(\\s*\\)|now\\s*\\(\\s*\\))`,
);

/** Names that hold a duration whatever they were computed from. */
const DURATION_NAME = /(?<![\w.$])(elapsed|took|waited|duration)(?![\w$])/;

/** A rate's floor (not Math.floor). */
const FLOOR = /(?<![\w.$])floor(?![\w$(])/;

/**
 * A bound written as a ratio: a decimal factor times a value (`1.1 * n`,
 * `sent * 1.5`). A test asserts a count it can state (`<= 7`), so that the
 * bound reads as the number it is; a ratio belongs to a bench.
 */
const RATIO = /(?<![\w.$])\d+\.\d+\s*\*|\*\s*\d+\.\d+(?![\w.$])/;

/** A comparison: <, <=, >, >= (not =>, <<, >>). */
const RELATION = /(?<![<=>!])(?:<=?|>=?)(?![<>=])/;

/** A difference of two operands. */
const SUBTRACTION = /[\w)\]]\s*-\s*[\w(]/;

/**
 * `source` with comments and the insides of string and template literals
 * blanked (same length, same lines): an assertion's message never counts.
 */
export function blankCommentsAndStrings(source: string): string {
  let out = "";
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      out += " ".repeat(stop - i);
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      out += source.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (c === "/" && /(^|[(,=:[!&|?{};]|\breturn)\s*$/.test(out)) {
      // A regular expression literal: to the next unescaped / outside [...].
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== "\n") {
        if (source[j] === "\\") j++;
        else if (source[j] === "[") inClass = true;
        else if (source[j] === "]") inClass = false;
        else if (source[j] === "/" && !inClass) break;
        j++;
      }
      out += "/" + " ".repeat(Math.max(0, j - i - 1)) +
        (source[j] === "/" ? "/" : "");
      i = source[j] === "/" ? j + 1 : j;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < source.length && source[j] !== c) {
        if (source[j] === "\\") j++;
        else if (c !== "`" && source[j] === "\n") break;
        j++;
      }
      out += c + source.slice(i + 1, j).replace(/[^\n]/g, " ") +
        (j < source.length ? c : "");
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The text from `open` (just after a `(`) to its matching `)`. */
function argumentsFrom(text: string, open: number): string {
  let depth = 1;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      if (--depth === 0) return text.slice(open, i);
    }
  }
  return text.slice(open);
}

/**
 * Whether a `(` after `before` opens a call's arguments: after a name, a
 * `)` or a `]`, or after a call's type arguments (`f<T>(`), which hold no
 * parentheses. A `>` that ends a comparison (`a > (b)`) is not one.
 */
function isCall(before: string): boolean {
  return /[\w$)\]]\s*$/.test(before) ||
    /[\w$]\s*<[^<>()=]*(?:<[^<>()=]*>[^<>()=]*)*>\s*$/.test(before);
}

/** `text` with the arguments of every call dropped: `f(a, b)` reads `f()`. */
function withoutCallArguments(text: string): string {
  let out = "";
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (depth > 0) {
      if (c === "(") depth++;
      else if (c === ")" && --depth === 0) out += ")";
    } else {
      out += c;
      if (c === "(" && isCall(text.slice(0, i))) depth = 1;
    }
  }
  return out;
}

/** What a name holds, as far as time goes. */
interface Timed {
  /** Read from, or computed from, the platform's clock. */
  readonly wall: boolean;
  /** A duration: a difference of clock readings, or named as one. */
  readonly duration: boolean;
}

/** A regular expression that finds `name` as a whole identifier. */
function identifier(name: string): RegExp {
  return new RegExp(`(?<![\\w.$])${name.replaceAll("$", "\\$")}(?![\\w$])`);
}

/**
 * The names assigned a clock reading, a duration or a value computed from
 * one (`const started = Date.now()`, `const took = timers.now - started`),
 * followed through the file until nothing changes. A value passed to a
 * function is not followed (`runFleet(startAt)` is no time).
 */
function timedNames(
  text: string,
): { names: Map<string, Timed>; notTimed: Set<string> } {
  const assignments = [
    ...text.matchAll(
      /(?<![\w.$])([A-Za-z_$][\w$]*)\s*=(?![=>])([^;\n]*(?:\n\s+[^;\n]*)*)/g,
    ),
  ].map((match) => [match[1]!, match[2]!] as const)
    // A function that reads the clock is a clock, not a reading.
    .filter(([, expression]) => !/^\s*(\([^)]*\)|[\w$]+)\s*=>/.test(expression))
    .map(([name, expression]) =>
      [name, withoutCallArguments(expression)] as const
    );
  const names = new Map<string, Timed>();
  const notTimed = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, expression] of assignments) {
      const used = [...names].filter(([other]) =>
        identifier(other).test(expression)
      ).map(([, timed]) => timed);
      const timed = CLOCK_READ.test(expression) || used.length > 0;
      if (!timed) {
        // `const waited = await getToken()`: a name, not a duration.
        if (DURATION_NAME.test(name)) notTimed.add(name);
        continue;
      }
      const next: Timed = {
        wall: WALL_READ.test(expression) || used.some((t) => t.wall),
        duration: identifier("elapsed|took|waited|duration").test(name) ||
          used.some((t) => t.duration) ||
          (timed && SUBTRACTION.test(expression)),
      };
      const before = names.get(name);
      if (
        before === undefined || (next.wall && !before.wall) ||
        (next.duration && !before.duration)
      ) {
        names.set(name, {
          wall: next.wall || (before?.wall ?? false),
          duration: next.duration || (before?.duration ?? false),
        });
        changed = true;
      }
    }
  }
  return { names, notTimed };
}

/**
 * Every assertion of `source` that asserts time: one that compares or
 * subtracts a reading of the platform's clock (or a value computed from
 * one), uses a duration (a difference of any clock's readings, or a value
 * named elapsed, took, waited or duration), subtracts any clock's
 * readings, or compares with a rate's floor. A fake clock's instant
 * compared with a stored instant (`expiresAt > clock()`) is no duration.
 */
export function findTimedAssertions(source: string): TimedAssertion[] {
  const text = blankCommentsAndStrings(source);
  const { names, notTimed } = timedNames(text);
  const found: TimedAssertion[] = [];
  for (const match of text.matchAll(ASSERTIONS)) {
    const open = match.index! + match[0].length;
    const args = argumentsFrom(text, open);
    const used = [...names].filter(([name]) => identifier(name).test(args));
    const relation = RELATION.test(args);
    const subtraction = SUBTRACTION.test(args);
    const clock = CLOCK_READ.test(args) || used.length > 0;
    const named = DURATION_NAME.exec(args)?.[1];
    const duration = used.find(([, timed]) => timed.duration)?.[0] ??
      (named !== undefined && !notTimed.has(named) ? named : undefined);
    const wall = WALL_READ.exec(args)?.[1] ??
      used.find(([, timed]) => timed.wall)?.[0];
    let why: string | undefined;
    // A comparison, a difference, an ordering assertion, or an equality
    // with a number.
    const bound = relation || subtraction ||
      /^assert(Less|Greater|Almost)/.test(match[1]!) ||
      (/equal/i.test(match[1]!) && /(?<![\w$.])\d/.test(args));
    if (duration !== undefined && bound) {
      why = `asserts a duration (${duration})`;
    } else if (wall !== undefined && (relation || subtraction)) {
      why = `compares the platform's clock (${wall})`;
    } else if (clock && subtraction) why = "subtracts clock readings";
    else if (FLOOR.test(args) && relation) {
      why = "compares with a rate's floor";
    } else if (RATIO.test(args) && relation) {
      why = "compares with a ratio (a decimal factor): assert the count";
    }
    if (why === undefined) continue;
    const line = text.slice(0, match.index).split("\n").length;
    const call = source.slice(match.index, open + args.length + 1)
      .replace(/\s+/g, " ");
    found.push({
      line,
      text: call.length > 120 ? `${call.slice(0, 117)}...` : call,
      why,
    });
  }
  return found;
}

/** One test that runs fake timers beside a real socket. */
export interface FakeTimersBesideSocket {
  /** 1-based line of the test's call. */
  readonly line: number;
  /** The test's name, cut short. */
  readonly name: string;
}

const FAKE_TIMERS =
  /\b(withFakeTimers|FakeTime|useFakeTimers)\s*\(|\.install\s*\(/;
const SOCKETS =
  /\b(startFakePartnerApi|Deno\.serve|Deno\.listen|Deno\.connect|connectRedis|startRedis)\s*\(/;
const TESTS = /^(?:Deno\.test|processTest|test|finding)\s*\(/gm;

/**
 * Every test of `source` that runs fake timers and opens a real socket (a
 * served fake, a server, a connection), itself or through a function of the
 * same file: on fake timers a socket's answer races a clock that moves
 * without it, and a busy machine loses the race.
 */
export function findFakeTimersBesideSockets(
  source: string,
): FakeTimersBesideSocket[] {
  const text = blankCommentsAndStrings(source);
  // The file's functions that open a socket, themselves or by a call.
  const bodies = new Map<string, string>();
  for (
    const match of text.matchAll(
      /(?:function\s+([A-Za-z_$][\w$]*)\s*\(|(?:const|let)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s*)?\()/g,
    )
  ) {
    const open = text.indexOf("{", match.index! + match[0].length);
    if (open < 0) continue;
    bodies.set(match[1] ?? match[2]!, argumentsFrom(text, open + 1));
  }
  const opening = new Set<string>();
  const opens = (body: string) =>
    SOCKETS.test(body) ||
    [...opening].some((name) =>
      new RegExp(`(?<![\\w.$])${name.replaceAll("$", "\\$")}\\s*\\(`).test(body)
    );
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, body] of bodies) {
      if (!opening.has(name) && opens(body)) {
        opening.add(name);
        changed = true;
      }
    }
  }
  const found: FakeTimersBesideSocket[] = [];
  for (const match of text.matchAll(TESTS)) {
    const open = match.index! + match[0].length;
    const block = argumentsFrom(text, open);
    if (!FAKE_TIMERS.test(block) || !opens(block)) continue;
    const call = source.slice(open, open + 160).replace(/\s+/g, " ");
    found.push({
      line: text.slice(0, match.index).split("\n").length,
      name: call.length > 100 ? `${call.slice(0, 97)}...` : call,
    });
  }
  return found;
}

/** The test files to read: tests/**, but the benches and their helpers. */
async function testFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await testFiles(path));
    else if (
      /\.(ts|mts|js|mjs)$/.test(entry.name) &&
      !/_bench\.ts$|^_bench/.test(entry.name)
    ) files.push(path);
  }
  return files.sort();
}

if (import.meta.main) {
  const files = Deno.args.length > 0 ? Deno.args : await testFiles("tests");
  let timed = 0;
  let beside = 0;
  for (const file of files) {
    const source = await Deno.readTextFile(file);
    for (const found of findTimedAssertions(source)) {
      timed++;
      console.error(`${file}:${found.line}: ${found.why}: ${found.text}`);
    }
    for (const found of findFakeTimersBesideSockets(source)) {
      beside++;
      console.error(
        `${file}:${found.line}: fake timers beside a real socket: ${found.name}`,
      );
    }
  }
  if (timed > 0) {
    console.error(
      `${timed} assertion${
        timed === 1 ? "" : "s"
      } of time in tests: assert counts instead (requests, 429s, sends per window by the server's count), and put the timing goal in a bench (tests/*_bench.ts)`,
    );
  }
  if (beside > 0) {
    console.error(
      `${beside} test${
        beside === 1 ? "" : "s"
      } with fake timers beside a real socket: reach an in-process fake through the \`fetch\` option (tests/_fast_setup.ts) instead`,
    );
  }
  if (timed + beside > 0) Deno.exit(1);
  console.log(
    `timed assertions, fake timers beside sockets: none in ${files.length} test files`,
  );
}
