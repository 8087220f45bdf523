// The scenario inside Cloudflare's workerd, from the bundle the test task
// builds. The fake runs in the Deno test outside; this Worker reaches it
// through a network service that allows loopback.
//
// POST /scenario        runs the scenario, answers its checks as JSON;
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
