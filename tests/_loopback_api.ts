// Shared by tests of what a real service may answer: a loopback server whose
// token endpoint issues one token and whose every other path answers as the
// test says.

import {
  defineEnvironment,
  type Environment,
} from "../src/core/environment.ts";

/** A loopback service: `/token` issues `token` (or what it gives each time); any other path gets `answer`. Disposing stops it. */
export function loopbackApi(
  token: string | (() => string),
  answer: (request: Request) => Response,
): { environment: Environment } & AsyncDisposable {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === "/token"
        ? Response.json({
          access_token: typeof token === "string" ? token : token(),
          token_type: "Bearer",
          expires_in: 3600,
        })
        : answer(request),
  );
  const at = `http://127.0.0.1:${server.addr.port}`;
  const environment = defineEnvironment({
    baseUrl: `${at}/api/`,
    pciBaseUrl: `${at}/pci/`,
    tokenUrl: `${at}/token`,
    audience: "https://partner-api.test",
  });
  return { environment, [Symbol.asyncDispose]: () => server.shutdown() };
}

/** A loopback token endpoint answering every request with `answer`: `options`, where a provider reaches it. Disposing stops it. */
export function loopbackTokenEndpoint(
  answer: (request: Request) => Response | Promise<Response>,
) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    answer,
  );
  const tokenUrl = `http://127.0.0.1:${server.addr.port}/token`;
  return {
    options: { tokenUrl, audience: "https://partner-api.test" },
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
