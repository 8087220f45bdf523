// Internal: the fake's answers: JSON, OAuth errors, and scripted faults.

import {
  checkNumber,
  fieldsOf,
  numberError,
  oneOf,
  requireKnownOptions,
  requireOptions,
  tried,
  typeError,
} from "../core/_check.ts";
import { delay } from "../core/_deadlines.ts";
import { base64url } from "../core/_encoding.ts";
import type { FakeFault } from "./fake_options.ts";

/** Sets `headers` on `response`, last, so they win. */
export type Decorate = (
  response: Response,
  headers?: Readonly<Record<string, string>>,
) => Response;

/** Sets `headers` on `response`: an API answer's decoration (the token endpoint's adds its quota header). */
export const withHeaders: Decorate = (response, headers = {}) => {
  for (const [name, value] of Object.entries(headers)) {
    response.headers.set(name, value);
  }
  return response;
};

/** The bound of a fault's `delay` (`ms`) and `retryAfter`: like every wait's (a timer takes a longer one as 1 ms). */
const FAULT_BOUNDS = [
  ["ms", "non-negative whole time in ms, at most 2147483647"],
  ["retryAfter", "non-negative whole time in s, at most 2147483"],
] as const;

/** Each kind's fields besides `kind`: another (`retryAftr`, or `ms` on a drop) would go unread. */
const FIELDS: Record<FakeFault["kind"], readonly string[]> = {
  status: ["status", "retryAfter", "headers"],
  delay: ["ms"],
  drop: [],
  body: ["body", "status", "headers"],
};
const KINDS = Object.keys(FIELDS) as FakeFault["kind"][];

/** `faults`, checked: a fault mistyped would answer a 500 of its own, which a test takes for the one it scripted. */
export function checkedFaults(faults: readonly FakeFault[], context: string) {
  if (!Array.isArray(faults)) {
    throw typeError(context, "faults", "must be an array", typeof faults);
  }
  faults.forEach((fault: unknown, i) =>
    checkFault(fault, context, `faults[${i}]`)
  );
  return [...faults];
}

function checkFault(fault: unknown, context: string, at: string) {
  requireOptions(fault, context, at);
  const { kind, status, body, headers, ...times } = fieldsOf(fault)!;
  oneOf(kind ?? "", KINDS, context, `${at}.kind`); // none: refused, not the first kind
  const fields = ["kind", ...FIELDS[kind as FakeFault["kind"]]];
  requireKnownOptions(fault, fields, context, at);
  for (const [key, rule] of FAULT_BOUNDS) {
    const time = times[key] as number | undefined;
    checkNumber(time, 0, rule, context, `${at}.${key}`);
  }
  // What `new Response` takes with a body; a status fault needs one.
  const answerable = Number.isInteger(status) && Number(status) >= 200 &&
    Number(status) <= 599 && ![204, 205, 304].includes(Number(status));
  if ((status !== undefined || kind === "status") && !answerable) {
    const rule = "must be an HTTP status from 200 to 599 that has a body";
    throw numberError(status, context, `${at}.status`, rule);
  }
  // Set name by name (`Object.entries`): an object of names and values, each one a Response takes.
  const named = fieldsOf(headers) &&
    Object.getPrototypeOf(headers) === Object.prototype;
  if (
    headers !== undefined &&
    (!named || !tried(() => new Headers(headers as never)))
  ) {
    const rule = "must be an object of valid HTTP header names and values";
    throw typeError(context, `${at}.headers`, rule);
  }
  if (kind === "body" && typeof body !== "string") {
    throw typeError(context, `${at}.body`, "must be a string", typeof body);
  }
}

/** A JSON answer that no cache keeps. */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json",
      "cache-control": "no-store",
      ...headers,
    },
  });
}

/** An OAuth 2.0 error answer. */
export function oauthError(status: number, error: string, description: string) {
  return json(status, { error, error_description: description });
}

/** URL-safe random text of `bytes` random bytes. */
export function randomText(bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Waits `ms`; only `closing` cuts it short (a client giving up does not change a real server either). */
export function pause(ms: number, closing: AbortSignal): Promise<void> {
  return ms > 0 ? delay(ms, closing).catch(() => {}) : Promise.resolve();
}

/** The answer `fault` (if any) makes of a request that `answer` would answer: as the token endpoint's, or the API's (`api`). */
export async function faultyAnswer(
  fault: FakeFault | undefined,
  answer: () => Response | Promise<Response>,
  { decorate, closing, api = false }: {
    decorate: Decorate;
    closing: AbortController;
    api?: boolean;
  },
): Promise<Response> {
  switch (fault?.kind) {
    case undefined:
      return await answer();
    case "status":
      return decorate(
        api
          ? json(fault.status, { error: "injected", message: "Injected fault" })
          : oauthError(fault.status, "server_error", "Injected fault"),
        fault.retryAfter === undefined
          ? fault.headers
          : { ...fault.headers, "retry-after": String(fault.retryAfter) },
      );
    case "delay":
      await pause(fault.ms, closing.signal);
      return await answer();
    case "drop":
      return droppedAnswer(api ? '{"items":[' : '{"access_token":"');
    case "body":
      return decorate(
        new Response(fault.body, {
          status: fault.status ?? 200,
          headers: { "content-type": "application/json" },
        }),
        fault.headers,
      );
  }
}

/** A 200 whose body stream errors after a few bytes: every server takes that for a cut (a short body only Deno did). */
function droppedAnswer(start: string): Response {
  let sent = false;
  return new Response(
    new ReadableStream({
      pull(controller) {
        if (sent) return controller.error(new Error("dropped by the fake"));
        controller.enqueue(new TextEncoder().encode(start));
        sent = true;
      },
    }),
    {
      headers: { "content-type": "application/json", "content-length": "512" },
    },
  );
}
