// A Deno Deploy style function that answers from the API with one token
// shared by every request the isolate serves.
//
//   deno run --env-file=.env --allow-env='PARTNER_API_*' \
//     --allow-net=0.0.0.0:8000,<token host>,<api host> examples/edge_function.ts

import { createClient, type PartnerClient } from "@partner-api/client";
import { configFromEnv } from "./_config.ts";

/** Answers `GET /organizations/count` with how many organizations there are. */
export function createHandler(
  client: PartnerClient,
): (request: Request) => Promise<Response> {
  return async (request) => {
    const { pathname } = new URL(request.url);
    if (request.method !== "GET" || pathname !== "/organizations/count") {
      return new Response("not found", { status: 404 });
    }
    let count = 0;
    for await (const _ of client.list("organizations", { limit: 100 })) count++;
    return Response.json({ organizations: count });
  };
}

if (import.meta.main) {
  const { environment, ...credentials } = configFromEnv();
  // Created once per isolate, outside the handler: every request shares the
  // cached token instead of spending one of the quota.
  const client = createClient({ environment, ...credentials });
  Deno.serve(createHandler(client));
}
