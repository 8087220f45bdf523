// A Deno Deploy style function that answers from the API. One client per
// isolate, made in one line at start-up; every isolate of the deployment
// shares its token through Deno KV, so a fleet spends one token, not one
// each. Failures become answers: 503 with Retry-After while the token quota
// is spent, 502 when the service fails, each logged with what to check.
//
//   deno serve --unstable-kv --unstable-no-legacy-abort --env-file=.env \
//     --allow-env='PARTNER_API_*' \
//     --allow-net=0.0.0.0:8000,<token host>,<api host> examples/edge_function.ts
//
// --unstable-no-legacy-abort: the handler passes request.signal to the
// client, so a list stops when the client goes away; without the flag
// Deno 2.9 also aborts it after every answer, and warns each time it is read.
// Deno Deploy runs the same default export. PARTNER_API_KV_PATH picks a
// local KV file (or ":memory:"; a file also needs --allow-read and
// --allow-write on it); on Deploy leave it unset.

import {
  configFromEnv,
  createClient,
  PartnerApiError,
  QuotaExceededError,
} from "@partner-api/client";
import { createKvTokenStore } from "@partner-api/client/kv";

const kv = await Deno.openKv(Deno.env.get("PARTNER_API_KV_PATH"));
const client = createClient({
  ...configFromEnv(),
  store: createKvTokenStore(kv),
});

/** Answers `GET /organizations/count` with how many organizations there are. */
async function answer(request: Request): Promise<Response> {
  const { pathname } = new URL(request.url);
  if (request.method !== "GET" || pathname !== "/organizations/count") {
    return new Response("not found", { status: 404 });
  }
  let count = 0;
  const organizations = client.list("organizations", {
    limit: 100,
    signal: request.signal,
  });
  for await (const _ of organizations) count++;
  return Response.json({ organizations: count });
}

/** What the caller gets when the service or the token endpoint fails. */
function failed(error: unknown): Response {
  // A QuotaExceededError is a TokenRequestError too: it comes first.
  if (error instanceof QuotaExceededError) {
    const seconds = Math.max(1, Math.ceil((error.retryAt - Date.now()) / 1000));
    return Response.json({ error: "the token quota is spent" }, {
      status: 503,
      headers: { "retry-after": String(seconds) },
    });
  }
  if (!(error instanceof PartnerApiError)) throw error;
  // The message says what to check (the variables, for a 401), never a secret.
  console.error(error.message);
  return Response.json({ error: "the partner API failed" }, { status: 502 });
}

export default {
  fetch: (request) => answer(request).catch(failed),
  // `deno serve` and Deploy call this once they listen.
  onListen(address) {
    console.log(`listening on ${JSON.stringify(address)}`);
  },
} satisfies Deno.ServeDefaultExport;
