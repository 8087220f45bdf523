// A Deno Deploy style function that answers from the API. Every request the
// isolate serves shares one client, and every isolate of the deployment
// shares one token through Deno KV: a fleet spends one token, not one each.
//
//   deno serve --unstable-kv --env-file=.env --allow-env='PARTNER_API_*' \
//     --allow-net=0.0.0.0:8000,<token host>,<api host> examples/edge_function.ts
//
// Deno Deploy runs the same default export. `deno run` with the same flags
// works too: it serves the module itself (after Deno's hint that
// `deno serve` is meant for it). PARTNER_API_KV_PATH picks a local KV file
// (or ":memory:"); on Deploy leave it unset.

import {
  configFromEnv,
  createClient,
  createTokenProvider,
  type PartnerClient,
} from "@partner-api/client";
import { createKvTokenStore } from "@partner-api/client/kv";

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

// Created once per isolate, on the first request, outside the handler: every
// request shares the cached token, and the KV store shares it with the other
// isolates.
let isolate: Promise<(request: Request) => Promise<Response>> | undefined;

async function isolateHandler(): Promise<
  (request: Request) => Promise<Response>
> {
  const { environment, ...credentials } = configFromEnv();
  const kv = await Deno.openKv(Deno.env.get("PARTNER_API_KV_PATH"));
  const tokenProvider = createTokenProvider({
    ...environment,
    ...credentials,
    store: createKvTokenStore(kv),
  });
  return createHandler(createClient({ environment, tokenProvider }));
}

let servedByDeno = false;

export default {
  fetch: async (request) =>
    await (await (isolate ??= isolateHandler()))(request),
  // `deno serve` and Deploy call this once they listen.
  onListen(address) {
    servedByDeno = true;
    console.log(`listening on ${JSON.stringify(address)}`);
  },
} satisfies Deno.ServeDefaultExport;

if (import.meta.main) {
  // Under `deno serve`, Deno has listened (and called onListen) before this
  // timer runs; under `deno run` nobody has, so the module serves itself.
  setTimeout(() => {
    if (!servedByDeno) {
      Deno.serve((request) =>
        (isolate ??= isolateHandler()).then((handle) => handle(request))
      );
    }
  }, 0);
}
