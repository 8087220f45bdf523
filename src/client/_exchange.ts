// What the send path works with: what a client's requests share, and one request.

import type { clientConfig } from "./_config.ts";
import type { Secret } from "../core/_redact.ts";

/** What every request of one client shares. */
export type SendContext = Readonly<ReturnType<typeof clientConfig>["context"]>;

/** One request to send. */
export interface Exchange<T> {
  /** The base the token is bound to; redirects are followed under it only. */
  readonly base: URL;
  /** Which base that is, for events. */
  readonly kind: "api" | "pci";
  readonly url: URL;
  readonly init: RequestInit;
  /** Start of error messages, e.g. "Cannot fetch". */
  readonly context: string;
  /** What must finish within the attempt's time limit (a page's body), given what its errors must not hold (built when read); an `ApiError` here is final. */
  readonly finish: (
    response: Response,
    sent: { readonly secrets: readonly Secret[] },
    attempts: number,
  ) => T | Promise<T>;
}
