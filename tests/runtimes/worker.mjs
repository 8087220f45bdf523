// The scenario inside Cloudflare's workerd, from the bundle the test task
// builds. The fake runs in the Deno test outside; this Worker reaches it
// through a network service that allows loopback.
//
// POST /scenario        runs the scenario, answers its checks as JSON;
// POST /shared-client   a page through a client shared across requests,
//                       paced to 1 request a window: callers wait in its
//                       limiter for a slot another request's timer frees.
// POST /shared-token    a token from a provider shared across requests
//                       (module state, like the README advises), with
//                       waitUntil or without it.

import * as lib from "./partner-api.mjs";
import { scenario } from "./scenario.mjs";
import { remoteFake } from "./control.mjs";
import { waitUntil } from "cloudflare:workers";

const shared = new Map();

export default {
  async fetch(request) {
    const { pathname } = new URL(request.url);
    const setup = await request.json();
    if (pathname === "/scenario") {
      return Response.json(await scenario(lib, remoteFake(setup)));
    }
    if (pathname === "/shared-client") return await sharedClient(setup);
    const key = setup.waitUntil ? "with waitUntil" : "without";
    if (!shared.has(key)) {
      shared.set(
        key,
        lib.createTokenProvider({
          ...lib.defineEnvironment(setup.environment),
          ...setup.credentials,
          refreshMargin: setup.refreshMargin,
          ...(setup.waitUntil ? { waitUntil } : {}),
        }),
      );
    }
    try {
      const token = await shared.get(key).getToken();
      return Response.json({ accessToken: token.accessToken });
    } catch (error) {
      return Response.json({ error: String(error) }, { status: 500 });
    }
  },
};

const clients = new Map();

/** A page through the client kept for `setup.key`: its status, or the error. */
async function sharedClient(setup) {
  if (!clients.has(setup.key)) {
    clients.set(
      setup.key,
      lib.createClient({
        environment: lib.defineEnvironment(setup.environment),
        ...setup.credentials,
        rateLimit: { requests: 1, interval: setup.interval },
      }),
    );
  }
  try {
    const answer = await clients.get(setup.key).fetch("organizations");
    await answer.body?.cancel();
    return Response.json({ status: answer.status });
  } catch (error) {
    return Response.json({ error: String(error) }, { status: 500 });
  }
}
