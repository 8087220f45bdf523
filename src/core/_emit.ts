// Internal: hands an event to a listener, frozen, ignoring what it throws.
// Callers check for a listener first, so that nobody listening costs nothing.

import type { EventListener, PartnerApiEvent } from "./events.ts";

/** Freezes `event` (and its quota) and gives it to `listener`. */
export function emit(listener: EventListener, event: PartnerApiEvent): void {
  if (event.type === "token.request" && event.quota !== undefined) {
    for (const bucket of event.quota) Object.freeze(bucket);
    Object.freeze(event.quota);
  }
  callListener(listener, Object.freeze(event));
}

/** Calls a user's listener, dropping what it throws or rejects with (an unhandled rejection ends a process). */
export function callListener<T>(listener: (value: T) => unknown, value: T) {
  try {
    const result = listener(value) as Partial<PromiseLike<unknown>> | null;
    result?.then?.(undefined, () => {});
  } catch {
    // A listener's failure must never change what the module does.
  }
}
