// The fleet window's rules twice: pure in TypeScript for KV (`takeTurn`), in
// Lua for Redis (the TAKE script). One property over random takes by a few
// processes, live and background, in a window whose sends stay for the run
// (a long interval): both grant the same, and both keep the same line (the
// same processes, in the same order, waiting for the same kind of send).
// (Waits and sends that leave are the clock's: Lua reads Redis's own.)

import { deepStrictEqual } from "node:assert/strict";
import fc from "fast-check";
import { connectRedis, redisTest, startRedis } from "./_redis_server.ts";
import { TAKE } from "../../src/store/_redis_rate_scripts.ts";
import {
  emptyState,
  GRACE,
  HOLD,
  takeTurn,
  type WindowState,
} from "../../src/store/_window_rules.ts";

/** A take: which process, background or live, how many sends. */
type Take = { holder: number; low: boolean; count: number };

const takes = fc.array(
  fc.record({
    holder: fc.integer({ min: 0, max: 3 }),
    low: fc.boolean(),
    count: fc.integer({ min: 0, max: 3 }),
  }),
  { minLength: 1, maxLength: 24 },
);

redisTest(
  "the take's rules in TypeScript (KV) and in Lua (Redis) grant the same and keep the same line, for any takes by 4 processes, live and background",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const names = "window line places holders turns block epoch".split(" ");
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 2, max: 8 }),
          fc.integer({ min: 0, max: 3 }),
          takes,
          async (requests, extra, asks) => {
            // A minute's interval: no send leaves, no place lapses while the run lasts.
            const limit = { requests, interval: 60_000 };
            const reserve = Math.min(extra, requests - 1);
            const keys = names.map((name) => `parity:${run}:{rate}:${name}`);
            run++;
            let state: WindowState = emptyState("e");
            let sent = 0;
            for (const { holder, low, count } of asks) {
              const sends = Array.from({ length: count }, () => `s${sent++}`);
              const reply = await client.command([
                "EVAL",
                TAKE,
                String(keys.length),
                ...keys,
                ...[requests, limit.interval, HOLD, GRACE].map(String),
                "e",
                `p${holder}`,
                "",
                "0",
                low ? "1" : "0",
                String(reserve),
                ...sends,
              ]) as unknown[];
              const ask = {
                holder: `p${holder}`,
                sends,
                epoch: "",
                returning: false,
                low,
                reserve,
              };
              const turn = takeTurn(state, ask, Date.now(), limit);
              state = turn.state;
              const line = await client.command([
                "ZRANGE",
                keys[1]!,
                "0",
                "-1",
              ]);
              const kinds = [];
              for (const id of line as string[]) {
                const lowPlace = await client.command([
                  "HGET",
                  keys[2]!,
                  `${id}|low`,
                ]);
                kinds.push(`${id}${lowPlace === "1" ? " low" : ""}`);
              }
              deepStrictEqual(
                {
                  granted: Number(reply[0]),
                  line: kinds,
                },
                {
                  granted: turn.granted,
                  line: state.line.map(([id, , , live]) =>
                    `${id}${live === 0 ? " low" : ""}`
                  ),
                },
                JSON.stringify({ requests, reserve, ask }),
              );
            }
          },
        ),
        { numRuns: 300, seed: 201 },
      );
    } finally {
      client.close();
    }
  },
);
