// The child processes of the process, Redis and runtime tests, and the
// deadline each of those tests runs under: a test that hangs fails within
// DEADLINE, names every process it started that is still running (its
// command and PID), and stops them by PID. A hung child or a hung test is
// a failure with a name, never a run that waits until someone kills it.
//
// Children are tracked only when started here: `new Command(...)` instead
// of `new Deno.Command(...)`, the same options and methods.

/** How long one process test may take, in ms. */
export const DEADLINE = 60_000;

// Taken before any test can replace them (fake timers): the deadline runs on
// the platform's clock.
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

/** A child started through {@linkcode Command}, until it exits. */
interface Running {
  readonly pid: number;
  readonly commandLine: string;
  readonly child: Deno.ChildProcess;
}

const running = new Map<number, Running>();

/** `program` and its arguments as a shell would show them, cut short. */
function commandLineOf(program: string | URL, args: readonly string[]) {
  const line = [String(program), ...args]
    .map((part) => /^[\w./:=@,+-]+$/.test(part) ? part : JSON.stringify(part))
    .join(" ");
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/**
 * `Deno.Command`, with each child it starts tracked until it exits, so that
 * {@linkcode withinDeadline} can name it and stop it.
 */
export class Command {
  readonly #program: string | URL;
  readonly #options: Deno.CommandOptions;

  constructor(program: string | URL, options: Deno.CommandOptions = {}) {
    this.#program = program;
    this.#options = options;
  }

  /** Starts the child (stdin, stdout and stderr inherited unless said). */
  spawn(): Deno.ChildProcess {
    return this.#start(this.#options);
  }

  /** Runs the child to its end; stdout and stderr piped unless said. */
  output(): Promise<Deno.CommandOutput> {
    return this.#start({
      ...this.#options,
      stdout: this.#options.stdout ?? "piped",
      stderr: this.#options.stderr ?? "piped",
    }).output();
  }

  #start(options: Deno.CommandOptions): Deno.ChildProcess {
    const child = new Deno.Command(this.#program, options).spawn();
    const { pid } = child;
    running.set(pid, {
      pid,
      commandLine: commandLineOf(this.#program, options.args ?? []),
      child,
    });
    child.status.finally(() => running.delete(pid));
    return child;
  }
}

/** The children started through {@linkcode Command} that are still running. */
export function runningChildren(): { pid: number; commandLine: string }[] {
  return [...running.values()].map(({ pid, commandLine }) => ({
    pid,
    commandLine,
  }));
}

/** Resolves when `promise` settles or after `ms`, whichever comes first. */
async function settledWithin(promise: Promise<unknown>, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise((resolve) => timer = realSetTimeout(resolve, ms)),
  ]);
  realClearTimeout(timer);
}

/**
 * Runs `work` within `ms` of the platform's time. Past it, every child
 * still running (started through {@linkcode Command}) is killed by its PID
 * (SIGKILL), and it throws an error naming each one: command and PID.
 */
export async function withinDeadline<T>(
  work: () => T | Promise<T>,
  ms: number = DEADLINE,
): Promise<T> {
  const result = Promise.resolve().then(work);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = Symbol("late");
  const first = await Promise.race([
    result.then(() => undefined, () => undefined),
    new Promise<typeof late>((resolve) =>
      timer = realSetTimeout(() => resolve(late), ms)
    ),
  ]);
  realClearTimeout(timer);
  if (first !== late) return await result;
  const left = [...running.values()];
  for (const { child } of left) {
    try {
      child.kill("SIGKILL");
    } catch {
      // It exited meanwhile.
    }
  }
  // The test's own awaits on its children can end now; it gets a moment.
  await settledWithin(
    Promise.allSettled([...left.map(({ child }) => child.status), result]),
    5000,
  );
  const named = left.map(({ pid, commandLine }) =>
    `PID ${pid}: ${commandLine}`
  );
  throw new Error(
    `the test did not end within ${ms / 1000} s; ${
      named.length === 0
        ? "none of the processes it started was still running"
        : `still running, killed by PID:\n  ${named.join("\n  ")}`
    }`,
  );
}

/**
 * `Deno.test` with {@linkcode withinDeadline}: a process test that hangs
 * fails within {@linkcode DEADLINE} and names what was still running.
 */
export function processTest(
  name: string,
  fn: (t: Deno.TestContext) => void | Promise<void>,
): void;
export function processTest(definition: Deno.TestDefinition): void;
export function processTest(
  nameOrDefinition: string | Deno.TestDefinition,
  fn?: (t: Deno.TestContext) => void | Promise<void>,
): void {
  const definition: Deno.TestDefinition = typeof nameOrDefinition === "string"
    ? { name: nameOrDefinition, fn: fn! }
    : nameOrDefinition;
  const body = definition.fn;
  Deno.test({
    ...definition,
    fn: (t) => withinDeadline(() => body(t)),
  });
}

/** Runs chattr on `path`; false where the file system or the user cannot (the test then says it skipped). */
export async function chattr(
  flag: "+i" | "-i",
  path: string,
): Promise<boolean> {
  const run = new Command("chattr", {
    args: [flag, path],
    stdout: "null",
    stderr: "null",
  });
  return (await run.output().catch(() => ({ success: false }))).success;
}
