// The one scenario every runtime runs, against the fake through its control
// routes (control.mjs). `lib` is the bundled module; `inspect` is the
// runtime's own inspector, where it has one.

/** @typedef {{ name: string, ok: boolean, detail?: string }} Check */

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/**
 * Runs every check and reports each; never throws.
 *
 * @returns {Promise<Check[]>}
 */
export async function scenario(lib, fake, { inspect } = {}) {
  const results = [];
  const check = async (name, fn) => {
    try {
      await fn();
      results.push({ name, ok: true });
    } catch (error) {
      results.push({ name, ok: false, detail: String(error?.stack ?? error) });
    }
  };
  const environment = lib.defineEnvironment(fake.environment);
  const options = { ...environment, ...fake.credentials };
  const requests = async () => (await fake.state()).tokenRequests;

  await check("two callers make one token request", async () => {
    const before = await requests();
    const provider = lib.createTokenProvider(options);
    const [a, b] = await Promise.all([
      provider.getToken(),
      provider.getToken(),
    ]);
    assert(a === b, "both callers get the same token");
    assert((await requests()) - before === 1, "one token request");
  });

  const client = lib.createClient({ environment, ...fake.credentials });
  await check("a list is paged in order, also at concurrency 3", async () => {
    const list = (concurrency) =>
      lib.collect(
        client.list("transactions", {
          sortBy: "creationDate",
          limit: 7,
          concurrency,
        }),
        { maxItems: 40 },
      );
    const [one, three] = await Promise.all([list(1), list(3)]);
    assert(one.length === 40, `40 items, got ${one.length}`);
    for (let i = 1; i < one.length; i++) {
      assert(one[i - 1].creationDate <= one[i].creationDate, "in order");
    }
    assert(JSON.stringify(one) === JSON.stringify(three), "the same at 3");
  });

  await check("a 401 is retried once with a fresh token", async () => {
    const first = await client.fetch("organizations");
    await first.body?.cancel();
    const before = await requests();
    await fake.revoke();
    const again = await client.fetch("organizations");
    await again.body?.cancel();
    assert(again.status === 200, `200 after renewal, got ${again.status}`);
    assert((await requests()) - before === 1, "one fresh token");
  });

  await check("a priority fetch lacks is refused before sending", async () => {
    const sent = (await fake.state()).apiRequests;
    const refused = await rejection(
      client.fetch("organizations", { priority: "urgent" }),
    );
    assert(refused instanceof TypeError, `got ${refused}`);
    assert(refused.option === "priority", `option ${refused.option}`);
    assert((await fake.state()).apiRequests === sent, "nothing sent");
  });

  await check("a 429 blocks the next call without a request", async () => {
    const provider = lib.createTokenProvider({ ...options, retry: false });
    await fake.inject("token", [{
      kind: "status",
      status: 429,
      headers: { "Idp-Client-Quota-Limit": "b=per_hour;q=5;r=0;t=600" },
    }]);
    const refused = await rejection(provider.getToken());
    assert(refused instanceof lib.QuotaExceededError, `got ${refused}`);
    const before = await requests();
    const blocked = await rejection(provider.getToken());
    assert(blocked instanceof lib.QuotaExceededError, `got ${blocked}`);
    assert((await requests()) === before, "nothing sent while blocked");
  });

  await check(
    "a redirect from the token endpoint is not followed",
    async () => {
      await fake.inject("token", [{
        kind: "status",
        status: 307,
        headers: { location: fake.trapUrl },
      }]);
      const error = await rejection(lib.requestToken(options));
      assert(error instanceof lib.TokenRequestError, `got ${error}`);
      assert(
        error.status === 307 && error.reason === "status",
        "the 307 itself",
      );
      assert(
        (await fake.state()).trapped === 0,
        "the secret went nowhere else",
      );
    },
  );

  await check("inspection and JSON hide the token and the secret", async () => {
    const provider = lib.createTokenProvider(options);
    const token = await provider.getToken();
    const shown = [JSON.stringify(token), JSON.stringify(provider)];
    if (inspect) shown.push(inspect(token), inspect(provider));
    for (const text of shown) {
      assert(!text.includes(token.accessToken), `token shown: ${text}`);
      assert(!text.includes(fake.credentials.clientSecret), "secret shown");
    }
  });
  return results;
}
