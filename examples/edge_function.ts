// A Deno Deploy style function that answers from the API. Every request the
// isolate serves shares one client, and every isolate of the deployment
// shares one token through Deno KV: a fleet spends one token, not one each.
//
//   deno run --unstable-kv --env-file=.env --allow-env='PARTNER_API_*' \
//     --allow-net=0.0.0.0:8000,<token host>,<api host> examples/edge_function.ts

import {
  createClient,
  createTokenProvider,
  type PartnerClient,
} from "@partner-api/client";
import { createKvTokenStore } from "@partner-api/client/kv";
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
  // cached token, and the KV store shares it with the other isolates.
  const kv = await Deno.openKv();
  const tokenProvider = createTokenProvider({
    ...environment,
    ...credentials,
    store: createKvTokenStore(kv),
  });
  Deno.serve(createHandler(createClient({ environment, tokenProvider })));
}
