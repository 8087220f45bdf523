// Real processes sharing one KV file: one token request for the whole fleet.
// Needs --allow-run=deno and read/write on .test-tmp only.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { scratchDir, startFleet } from "./_fleet.ts";
import { processTest } from "../_processes.ts";

const FLEET = 8;

processTest(
  "8 cold processes sharing a KV file make one token request; a second wave none",
  async () => {
    await using api = await startFakePartnerApi();
    const dir = await scratchDir();
    try {
      const kvPath = `${dir}/tokens.sqlite`;
      const first = await startFleet(api, FLEET, { kvPath }).results();
      ok(
        first.every((result) => result !== undefined),
        "every process got a token",
      );
      equal(
        new Set(first.map((result) => result!.token)).size,
        1,
        "all hold the same token",
      );
      equal(api.tokenRequests, 1);
      const second = await startFleet(api, FLEET, { kvPath, startDelay: 500 })
        .results();
      equal(
        new Set([...first, ...second].map((result) => result?.token)).size,
        1,
      );
      equal(api.tokenRequests, 1, "the second wave reused it");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

processTest(
  "killing the lease holder mid-request still gives every other process a valid token",
  async () => {
    await using api = await startFakePartnerApi();
    api.injectTokenFaults({ kind: "delay", ms: 5000 }); // the holder's request hangs
    const dir = await scratchDir();
    try {
      const kvPath = `${dir}/tokens.sqlite`;
      // A lease a starved holder still renews in time (each third of it): at 1 s, a run on a machine with 12 busy
      // processes saw a living holder's lease taken, and a second token.
      const fleet = startFleet(api, FLEET, { kvPath, leaseMs: 3000 });
      using kv = await Deno.openKv(kvPath);
      // Kill the holder only once its request is on the wire, hanging.
      while (api.tokenRequests === 0) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      let holder: string | undefined;
      while (holder === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        for await (
          const entry of kv.list<{ holder: string }>({
            prefix: ["partner-api", "token"],
          })
        ) {
          if (entry.key.at(-1) === "lease") holder = entry.value.holder;
        }
      }
      const victim = fleet.children.find((child) =>
        String(child.pid) === holder
      )!;
      victim.kill("SIGKILL");
      const results = await fleet.results();
      const survivors = results.filter((result) => result !== undefined);
      equal(survivors.length, FLEET - 1);
      equal(new Set(survivors.map((result) => result.token)).size, 1);
      equal(
        api.tokenRequests,
        2,
        "the hung request, then one by whoever took over",
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

processTest(
  "without a shared store, every process spends a token",
  async () => {
    await using api = await startFakePartnerApi();
    const results = await startFleet(api, 4, { startDelay: 1000 }).results();
    equal(new Set(results.map((result) => result?.token)).size, 4);
    equal(api.tokenRequests, 4);
  },
);

processTest(
  "the 401 ledger is the fleet's: 8 new processes over one KV file, one after another on a 401 path, spend at most 2 token requests",
  async () => {
    await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
    const dir = await scratchDir();
    try {
      const kvPath = `${dir}/tokens.sqlite`;
      for (let process = 0; process < FLEET; process++) {
        api.injectApiFaults({ kind: "status", status: 401 });
        const [result] = await startFleet(api, 1, {
          kvPath,
          startDelay: 0,
          call: true,
        }).results();
        equal(result?.status, process === 0 ? 200 : 401, "renewed once");
      }
      ok(api.tokenRequests <= 2, `${api.tokenRequests} token requests`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
