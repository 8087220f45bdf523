// The fast setup the unit tests share: the fake served in process (no
// sockets, so fake timers drive everything it does), clients over it, and
// a driver that runs fake time until some work is done, also across real
// I/O (Deno KV, crypto.subtle) that it waits for before the clock moves.
// What needs a real socket (the runtime's own fetch, redirects, a reset
// connection) keeps startFakePartnerApi.

import type { Clock } from "@sinonjs/fake-timers";
import {
  type ClientOptions,
  createClient,
  type PartnerClient,
} from "../src/client/mod.ts";
import {
  defineEnvironment,
  type Environment,
} from "../src/core/environment.ts";
import {
  createFakePartnerService,
  type FakeCredentials,
  type FakePartnerService,
  type FakePartnerServiceOptions,
} from "../src/testing/mod.ts";
import { seededRandom } from "../src/testing/_list_data.ts";

// Loopback origins, as the environment demands for plain http; nothing
// listens there (a request sent with the real fetch is refused at once).
const MAIN = "http://127.0.0.1:9";
const PCI = "http://127.0.0.1:10";

/** Options of {@linkcode inProcessFake}. */
export interface InProcessOptions extends FakePartnerServiceOptions {
  /**
   * Each request takes up to this many ms (seeded) to arrive, and as long
   * to come back, as on a network: the service counts arrivals, not sends.
   */
  wire?: number;
}

/** The fake without a server, and a `fetch` that reaches it. */
export interface InProcessFake extends Disposable {
  readonly service: FakePartnerService;
  readonly environment: Environment;
  readonly credentials: FakeCredentials;
  /**
   * Like the runtime's fetch: stops at its signal (also while the body is
   * read), and a body shorter than its `Content-Length` fails as a cut
   * connection does.
   */
  readonly fetch: typeof fetch;
  /** Every request, in the order sent. */
  readonly sent: Request[];
  /** Answers by status. */
  readonly statuses: Map<number, number>;
}

/** Serves `createFakePartnerService(options)` in process. */
export function inProcessFake(options: InProcessOptions = {}): InProcessFake {
  const { wire: most = 0, ...serviceOptions } = options;
  const service = createFakePartnerService(serviceOptions);
  const random = seededRandom(options.seed ?? 1);
  const wire = async () => {
    const ms = Math.floor(random() * most);
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
  };
  const sent: Request[] = [];
  const statuses = new Map<number, number>();
  const fetch = fetchOver(async (request) => {
    sent.push(request);
    await wire();
    const handle = handlerOf(service, new URL(request.url).origin);
    const response = await handle(request);
    await wire();
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    return response;
  });
  return {
    service,
    environment: service.environmentAt(MAIN, PCI),
    credentials: service.credentials,
    fetch,
    sent,
    statuses,
    [Symbol.dispose]: () => service.close(),
  };
}

/** A client of `fake`, paced and retried as by default unless `options` say. */
export function clientOf(
  fake: InProcessFake,
  options: Partial<ClientOptions> = {},
): PartnerClient {
  return createClient({
    environment: fake.environment,
    ...fake.credentials,
    fetch: fake.fetch,
    ...options,
  } as ClientOptions);
}

/**
 * `fake` with one of its bases (the API's by default) moved to an origin
 * the test answers with `handle`, in process too: a misbehaving server
 * beside the fake's token endpoint.
 */
export function besideFake(
  fake: InProcessFake,
  handle: (request: Request) => Response | Promise<Response>,
  base: "baseUrl" | "pciBaseUrl" = "baseUrl",
): {
  environment: Environment;
  fetch: typeof fetch;
  readonly requests: number;
} {
  const origin = "http://127.0.0.1:11/api/";
  let requests = 0;
  return {
    environment: defineEnvironment({ ...fake.environment, [base]: origin }),
    fetch: fetchOver(async (request) => {
      if (!request.url.startsWith(origin)) return await fake.fetch(request);
      requests++;
      return await handle(request);
    }),
    get requests() {
      return requests;
    },
  };
}

function handlerOf(service: FakePartnerService, origin: string) {
  if (origin === MAIN) return service.handle;
  if (origin === PCI) return service.handlePci;
  return () =>
    Promise.reject(new TypeError(`fetch failed: nothing at ${origin}`));
}

/**
 * A `fetch` whose answers come from `handle`, with the runtime's manners:
 * it stops at its signal (also while the body is read), and a body shorter
 * than its `Content-Length` fails as a cut connection does. `handle`
 * throwing a `TypeError` is a network error, as in the runtime's fetch.
 */
export function fetchOver(
  handle: (request: Request) => Promise<Response>,
): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const { signal } = request;
    signal.throwIfAborted();
    const response = await raceSignal(handle(request), signal);
    signal.throwIfAborted();
    return framed(response, signal);
  };
}

/** Settles like `promise`, or rejects with the signal's reason. */
function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", abort)
    );
  });
}

/**
 * `response` with its body as a connection delivers it: cut short of its
 * `Content-Length`, it fails; when the signal aborts, it fails with the
 * signal's reason.
 */
function framed(response: Response, signal: AbortSignal): Response {
  if (response.body === null) return response;
  const declared = response.headers.get("content-length");
  const length = declared === null ? Infinity : Number(declared);
  const reader = response.body.getReader();
  let received = 0;
  let stop = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      stop = () => {
        controller.error(signal.reason);
        reader.cancel(signal.reason).catch(() => {});
      };
      signal.addEventListener("abort", stop, { once: true });
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (signal.aborted) return;
      if (!done) {
        received += value.byteLength;
        return controller.enqueue(value);
      }
      signal.removeEventListener("abort", stop);
      if (received >= length || length === Infinity) return controller.close();
      controller.error(
        new TypeError(`connection closed after ${received} of ${length} bytes`),
      );
    },
    cancel(reason) {
      signal.removeEventListener("abort", stop);
      return reader.cancel(reason);
    },
  });
  const { status, statusText, headers } = response;
  return new Response(body, { status, statusText, headers });
}

/**
 * Resolves once the fake clock `timers` has moved `ms` on (a timer of that
 * clock, never of the platform): a test's "later", driven, not waited.
 */
export function onFakeClock(timers: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => timers.setTimeout(() => resolve(), ms));
}

/** One turn of the real event loop: I/O that finished gets to run. */
export function realTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs fake time until `work` settles: the timers due next, with the real
 * event loop turning (and `io`, if given, done) before the clock moves on,
 * so that work in flight is never overtaken by time. Throws when
 * nothing is left to run for 5 s of real time: `work` hangs.
 */
export async function drive<T>(
  timers: Clock,
  pending: T | PromiseLike<T>,
  io?: () => Promise<void>,
): Promise<T> {
  const work = Promise.resolve(pending);
  let settled = false;
  work.then(() => settled = true, () => settled = true);
  let idleSince = Date.now();
  while (true) {
    await realTurn();
    await io?.();
    if (settled) return await work;
    if (timers.countTimers() > 0) {
      // Every timer due at that moment, as a runtime fires them together
      // before the I/O they start can answer.
      await timers.nextAsync();
      await timers.tickAsync(0);
      idleSince = Date.now();
    } else if (Date.now() - idleSince > 5000) {
      throw new Error("no timer is set and the work has not settled: a hang");
    }
  }
}

/** Real I/O that {@linkcode drive} waits for before it moves the clock. */
export interface TrackedIo extends Disposable {
  /**
   * The database, as one connection: its operations run one at a time in
   * the order called (so that a run repeats), each answer arriving
   * `latency` ms of fake time after the call.
   */
  readonly kv: Deno.Kv;
  /** Resolves when no operation of `kv` and no `crypto.subtle` call is under way. */
  idle(): Promise<void>;
}

/**
 * Tracks `kv` and, until disposed, `crypto.subtle` (stores seal records
 * and derive keys with it): pass `idle` to {@linkcode drive}, and real I/O
 * takes no fake time beyond `latency` (0: none; operations of several
 * processes then never overlap).
 */
export function trackedIo(
  kv?: Deno.Kv,
  latency = 0,
): TrackedIo {
  const pending = new Set<Promise<unknown>>();
  const follow = (promise: Promise<unknown>) => {
    const done = promise.then(() => {}, () => {});
    pending.add(done);
    done.then(() => pending.delete(done));
  };
  let last: Promise<unknown> = Promise.resolve();
  const run = <T>(operation: () => Promise<T>): Promise<T> => {
    const result = last.then(operation);
    follow(last = result.catch(() => {}));
    if (latency === 0) return result;
    const arrival = new Promise((resolve) => setTimeout(resolve, latency));
    return Promise.all([result, arrival]).then(([value]) => value);
  };
  const track = <T extends object>(target: T, kind: keyof typeof ASYNC): T => {
    const proxy: T = new Proxy(target, {
      get(object, key) {
        const value = Reflect.get(object, key, object);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (ASYNC[kind].includes(key)) {
            return run(() => value.apply(object, args));
          }
          const result = value.apply(object, args);
          if (result === object) return proxy; // chained: keep tracking
          if (key === "atomic") return track(result, "atomic");
          return key === "list" ? track(result, "list") : result;
        };
      },
    });
    return proxy;
  };
  const subtle = crypto.subtle as unknown as Record<string, unknown>;
  for (const name of SUBTLE) {
    const original = subtle[name] as (...args: unknown[]) => Promise<unknown>;
    subtle[name] = (...args: unknown[]) => {
      const result = original.apply(crypto.subtle, args);
      follow(result);
      return result;
    };
  }
  return {
    kv: kv === undefined ? undefined as never : track(kv, "kv"),
    async idle() {
      await realTurn();
      while (pending.size > 0) {
        await Promise.allSettled([...pending]);
        await realTurn();
      }
    },
    [Symbol.dispose]() {
      for (const name of SUBTLE) delete subtle[name];
    },
  };
}

/** The methods that start an operation, by the object that has them. */
const ASYNC: Record<"kv" | "atomic" | "list", readonly PropertyKey[]> = {
  kv: ["get", "getMany", "set", "delete", "enqueue"],
  atomic: ["commit"],
  list: ["next"],
};

const SUBTLE = [
  "digest",
  "encrypt",
  "decrypt",
  "sign",
  "verify",
  "importKey",
  "exportKey",
  "deriveKey",
  "deriveBits",
  "generateKey",
  "wrapKey",
  "unwrapKey",
] as const;
