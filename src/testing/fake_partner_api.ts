// The fake partner service on Deno.serve: two origins on 127.0.0.1.

import type { Environment } from "../core/environment.ts";
import {
  checkAtMost,
  checkNumber,
  requireDeno,
  requireFunction,
  requireKnownOptions,
} from "../core/_check.ts";
import { json } from "./_fake_http.ts";
import { createFakePartnerService, type FakeControls } from "./fake_service.ts";
import type { FakePartnerServiceOptions } from "./fake_options.ts";
import { SERVICE_OPTIONS } from "./_service_options.ts";

/**
 * Options of {@linkcode startFakePartnerApi}: those of the service, and where it listens.
 *
 * @example A fake with its quota, on a port of your choice
 * ```ts
 * import { type FakePartnerApiOptions, startFakePartnerApi } from "@partner-api/client/testing";
 * import { requestToken } from "@partner-api/client/token";
 * import { equal } from "node:assert/strict";
 *
 * // port 0: any free port; give one (e.g. 8787) for another terminal to reach it.
 * const options: FakePartnerApiOptions = { port: 0, quota: { perHour: 10 } };
 * await using api = await startFakePartnerApi(options);
 * const token = await requestToken({ ...api.environment, ...api.credentials });
 * equal(token.quota[0]?.remaining, 9);
 * ```
 */
export interface FakePartnerApiOptions extends FakePartnerServiceOptions {
  /**
   * The port of the main origin (token endpoint and API).
   * @default {0: any free port}
   */
  port?: number;
  /**
   * The port of the card-data origin.
   * @default {0: any free port}
   */
  pciPort?: number;
  /**
   * Hears every request the fake answered, e.g. to log it.
   * @default {none}
   */
  onRequest?: (answered: FakeRequestLog) => void;
}

/**
 * One answered request, as {@linkcode FakePartnerApiOptions.onRequest} hears it: never a credential or a token.
 *
 * @example A log line per request
 * ```ts
 * import { type FakeRequestLog, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const log: string[] = [];
 * const line = (r: FakeRequestLog) => `${r.method} ${r.path} ${r.status} (token requests: ${r.tokenRequests})`;
 * await using api = await startFakePartnerApi({ onRequest: (answered) => log.push(line(answered)) });
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await (await client.fetch("organizations")).body?.cancel();
 * deepStrictEqual(log, ["POST /oauth/token 200 (token requests: 1)", "GET /api/organizations 200 (token requests: 1)"]);
 * ```
 */
export interface FakeRequestLog {
  /** The request's method. */
  readonly method: string;
  /** The URL's path, without the query. */
  readonly path: string;
  /** The answer's status. */
  readonly status: number;
  /** Token requests the fake has counted so far. */
  readonly tokenRequests: number;
}

/**
 * A running fake of the partner service.
 *
 * @example Checking that code renews a revoked token
 * ```ts
 * import { type FakePartnerApi, startFakePartnerApi } from "@partner-api/client/testing";
 * import { createClient } from "@partner-api/client/client";
 * import { equal } from "node:assert/strict";
 *
 * await using api: FakePartnerApi = await startFakePartnerApi();
 * const client = createClient({ environment: api.environment, ...api.credentials });
 * await (await client.fetch("organizations")).body?.cancel();
 * api.revokeTokens();
 * const response = await client.fetch("organizations");
 * await response.body?.cancel();
 * equal(response.status, 200); // the 401 cost one fresh token
 * equal(api.tokenRequests, 2);
 * ```
 */
export interface FakePartnerApi extends FakeControls, AsyncDisposable {
  /** Its environment, on `http://127.0.0.1:<port>/`. */
  readonly environment: Environment;
  /** Stops the server and waits until it has. */
  close(): Promise<void>;
}

const CONTEXT = "Cannot start fake partner API";

/**
 * Starts a fake of the partner service on 127.0.0.1. Its token endpoint validates requests like the
 * real one (400 `invalid_request` for a bad body or grant type, 401 `access_denied` for wrong
 * credentials or audience), issues opaque tokens that expire after `tokenLifetime`, counts a
 * per-hour and per-day quota on the UTC hour and day of its clock, sends `Idp-Client-Quota-Limit`
 * (with `r` after each answer) and answers 429 past the quota.
 * @returns The running fake; close it with `close()` or `await using`.
 * @throws {RangeError} When a number option is out of range (see `createFakePartnerService`), a port above 65,535; a
 * `TypeError` when it is no number.
 * @throws {TypeError} When `onRequest` is not a function, or an option of `createFakePartnerService` is invalid; outside
 * Deno (`option: "port"`), before anything is checked or served.
 * @throws {Deno.errors.AddrInUse} When a port is taken; nothing stays served.
 *
 * @example Testing code against the fake
 * ```ts
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { requestToken } from "@partner-api/client/token";
 * import { equal, ok } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ tokenLifetime: 60_000 });
 * const token = await requestToken({ ...api.environment, ...api.credentials });
 * equal(token.expiresIn, 60);
 * ok(api.isValidToken(token.accessToken));
 * ```
 */
export async function startFakePartnerApi(
  options: FakePartnerApiOptions = {},
): Promise<FakePartnerApi> {
  requireDeno(
    CONTEXT,
    "port",
    "is served with Deno.serve (startFakePartnerApi runs on Deno only; elsewhere serve createFakePartnerService()'s handle and handlePci on a server of yours, e.g. node:http)",
  );
  const { ports, onRequest, serviceOptions } = serverOptions(options);
  const service = createFakePartnerService(serviceOptions);
  const serve = (port: number, handle: typeof service.handle) =>
    Deno.serve(
      {
        hostname: "127.0.0.1",
        port,
        onListen: () => {},
        onError: () => json(500, { error: "server_error" }),
      },
      !onRequest ? handle : async (request) => {
        const response = await handle(request);
        const { method, url } = request;
        const { tokenRequests } = service;
        const path = new URL(url).pathname;
        onRequest({ method, path, status: response.status, tokenRequests });
        return response;
      },
    );
  const main = serve(ports.main, service.handle);
  let pci: ReturnType<typeof serve>;
  try {
    pci = serve(ports.pci, service.handlePci);
  } catch (error) {
    // A PCI port in use: the main server goes too, or it keeps the process alive.
    service.close();
    await main.shutdown();
    throw error;
  }
  const environment = service.environmentAt(
    `http://127.0.0.1:${main.addr.port}`,
    `http://127.0.0.1:${pci.addr.port}`,
  );
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      service.close();
      await Promise.all([main.shutdown(), pci.shutdown()]);
    })();
  // Every control of the service as it is (its counts are getters), not its serving parts; `close` is replaced.
  const { handle: _, handlePci: _pci, environmentAt: _at, ...controls } = Object
    .getOwnPropertyDescriptors(service);
  const api = Object.defineProperties({ environment }, controls);
  return Object.assign(api as FakePartnerApi, {
    close,
    [Symbol.asyncDispose]: close,
  });
}

/** The servers' own options, checked: both ports before either serves (a refusal leaves none running), and `onRequest`. */
function serverOptions(options: FakePartnerApiOptions) {
  const names = [...SERVICE_OPTIONS, "port", "pciPort", "onRequest"];
  requireKnownOptions(options, names, CONTEXT);
  const { port: _, pciPort: _pci, onRequest, ...serviceOptions } = options;
  const port = (name: "port" | "pciPort") => {
    const rule = "non-negative integer";
    const value = checkNumber(options[name], 0, rule, CONTEXT, name);
    return checkAtMost(value, 65_535, CONTEXT, name);
  };
  return {
    ports: { main: port("port"), pci: port("pciPort") },
    onRequest: requireFunction(onRequest, CONTEXT, "onRequest"),
    serviceOptions,
  };
}
