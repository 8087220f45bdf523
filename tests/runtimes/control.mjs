// Control routes the test harness serves next to the fake service, so that
// a scenario running anywhere (another process, a Worker) can read the
// fake's counters and script it over HTTP.

const json = (body) => Response.json(body);

/** The fake's main origin plus /__control/ routes. */
export function withControl(service) {
  let trapped = 0;
  return async (request) => {
    const { pathname } = new URL(request.url);
    switch (pathname) {
      case "/__control/state":
        return json({
          tokenRequests: service.tokenRequests,
          apiRequests: service.apiRequests,
          trapped,
        });
      case "/__control/inject": {
        const { target, faults } = await request.json();
        if (target === "token") service.injectTokenFaults(...faults);
        else service.injectApiFaults(...faults);
        return json({});
      }
      case "/__control/revoke":
        service.revokeTokens();
        return json({});
      case "/__control/trap":
        trapped++;
        return json({});
      default:
        return await service.handle(request);
    }
  };
}

/** The JSON-able description of a served fake that `remoteFake` takes. */
export function describeFake(service, origin, pciOrigin) {
  const environment = service.environmentAt(origin, pciOrigin);
  return {
    origin,
    environment: {
      baseUrl: environment.baseUrl.href,
      pciBaseUrl: environment.pciBaseUrl.href,
      tokenUrl: environment.tokenUrl.href,
      audience: environment.audience,
    },
    credentials: service.credentials,
  };
}

/** The fake as a scenario sees it, wherever it runs. */
export function remoteFake({ origin, environment, credentials }) {
  const post = async (path, body) => {
    const response = await fetch(`${origin}/__control/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body ?? {}),
    });
    return await response.json();
  };
  return {
    environment,
    credentials,
    trapUrl: `${origin}/__control/trap`,
    state: async () => await (await fetch(`${origin}/__control/state`)).json(),
    inject: (target, faults) => post("inject", { target, faults }),
    revoke: () => post("revoke"),
  };
}
