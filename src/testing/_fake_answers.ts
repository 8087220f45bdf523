// How the fake answers a list request that passed its token check: a page, as the service sends it.

import {
  BadQuery,
  type generateLists,
  type ListResource,
  pageOf,
} from "./_list_data.ts";
import { json } from "./_fake_http.ts";

/** One page of a list, as the service sends it. */
export function answerList(
  serving: {
    readonly lists: ReturnType<typeof generateLists>;
    readonly listEnvelope: "object" | "array";
    /** Changes the list before each page, as churn does. */
    readonly churn: ((resource: ListResource) => void) | undefined;
    readonly maxLimit: number;
    readonly cutAtMax: boolean;
  },
  request: Request,
  name: string,
): Response {
  const { lists, listEnvelope: envelope, churn, maxLimit, cutAtMax } = serving;
  const resource = lists.get(name);
  if (resource === undefined) return json(404, { error: "not_found" });
  churn?.(resource);
  const params = new URL(request.url).searchParams;
  let page: readonly Record<string, unknown>[];
  try {
    page = pageOf(resource, params, maxLimit, cutAtMax);
  } catch (error) {
    if (!(error instanceof BadQuery)) throw error;
    return json(400, { error: "bad_request", message: error.message });
  }
  if (envelope === "array") return json(200, page);
  return json(200, {
    [name]: page,
    page: Number(params.get("page") ?? 1),
    limit: Number(params.get("limit") ?? 50),
  });
}
