// The fleet window's rules twice: pure in TypeScript for KV (`takeTurn`,
// `answerSends`), in Lua for Redis (the TAKE and ANSWER scripts). One
// property over random takes and answers by a few processes, live and
// background, and refusals (429s), as time passes: both grant the same, name the same wait, and
// keep the same line (the same processes, in the same order, waiting for the
// same kind of send). The scripts read Redis's clock; here they read a key
// that the test moves, so that both sides see one `now`.

import { deepStrictEqual } from "node:assert/strict";
import fc from "fast-check";
import { connectRedis, redisTest, startRedis } from "./_redis_server.ts";
import { ANSWER, REFUSE, TAKE } from "../../src/store/_redis_rate_scripts.ts";
import {
  answerSends,
  emptyState,
  GRACE,
  HOLD,
  refuseSends,
  slotShare,
  takeTurn,
  type WindowState,
} from "../../src/store/_window_rules.ts";

const CLOCK = "parity:now";

/** The script on the test's clock, not Redis's. */
function onTestClock(script: string): string {
  const clock = /local time = redis\.call\('TIME'\)\nlocal now = [^\n]+\n/;
  if (!clock.test(script)) throw new Error("the script reads no clock");
  return script.replace(
    clock,
    `local now = tonumber(redis.call('GET', '${CLOCK}'))\n`,
  );
}

/** A step: time passes, then a process takes (live or background) or an unanswered send is answered. */
const steps = fc.array(
  fc.record({
    after: fc.constantFrom(0, 1, 5, 20, 50, 150, 400, 900),
    // Two processes most often: a recent grant then meets the other's place in line (spacing).
    holder: fc.oneof(fc.constantFrom(0, 1), fc.integer({ min: 0, max: 3 })),
    low: fc.boolean(),
    count: fc.constantFrom(0, 1, 1, 1, 2, 3),
    answer: fc.option(fc.nat(), { nil: undefined }),
    refused: fc.boolean(),
    // Its last grant dated on a clock ahead of this one (a Redis failed over to one behind), by so many ms past
    // a share and over: around the bound, and far beyond it.
    staleGrant: fc.option(fc.constantFrom(0, 1, 100, 1000, 30_000), {
      freq: 9,
      nil: undefined,
    }),
  }),
  { minLength: 1, maxLength: 120 },
);

redisTest(
  "the take's rules in TypeScript (KV) and in Lua (Redis) grant the same, name the same wait and keep the same line, for any takes, answers and refusals by 4 processes, live and background, each spaced a share after its last grant while others wait, as time passes (a background take during a block while a live caller waited: Redis said the block's end, KV a share)",
  async () => {
    await using redis = await startRedis();
    const client = await connectRedis(redis.port);
    const take = onTestClock(TAKE), answer = onTestClock(ANSWER);
    const refuse = onTestClock(REFUSE);
    const names = "window line places holders turns block epoch".split(" ");
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 2, max: 8 }),
          fc.integer({ min: 0, max: 3 }),
          steps,
          async (requests, extra, moves) => {
            const limit = { requests, interval: 1000 };
            const reserve = Math.min(extra, requests - 1);
            const keys = names.map((name) => `parity:${run}:{rate}:${name}`);
            const args = [requests, limit.interval, HOLD, GRACE].map(String);
            run++;
            let state: WindowState = emptyState("e"), now = 1e12, sent = 0;
            const unanswered: string[] = [];
            /** Each holder's last grant, as its process keeps it: while others wait, its next comes a share later. */
            const lastGrant = new Map<string, number>();
            for (const move of moves) {
              const { after, holder, low, count, answer: which } = move;
              await client.command(["SET", CLOCK, String(now += after)]);
              if (move.refused && which !== undefined) {
                // A 429: a window with room is full for one slot's share.
                state = refuseSends(state, now, limit);
                await client.command(
                  [
                    "EVAL",
                    refuse,
                    "2",
                    keys[0]!,
                    keys[5]!,
                    ...args.slice(0, 2),
                  ],
                );
                continue;
              }
              if (which !== undefined && unanswered.length > 0) {
                const [send] = unanswered.splice(which % unanswered.length, 1);
                state = answerSends(state, [[send!, now, -1]]);
                await client.command(
                  ["EVAL", answer, "2", keys[0]!, keys[6]!, ...args.slice(1, 3)]
                    .concat(send!),
                );
                continue;
              }
              const sends = Array.from({ length: count }, () => `s${sent++}`);
              if (move.staleGrant !== undefined) {
                lastGrant.set(`p${holder}`, now + move.staleGrant);
              }
              const spacedUntil = (lastGrant.get(`p${holder}`) ?? -Infinity) +
                slotShare(limit);
              const ask = {
                holder: `p${holder}`,
                sends,
                epoch: "",
                returning: false,
                low,
                reserve,
                spacedUntil,
              };
              const reply = await client.command([
                "EVAL",
                take,
                String(keys.length),
                ...keys,
                ...args,
                "e",
                ask.holder,
                "",
                "0",
                low ? "1" : "0",
                String(reserve),
                Number.isFinite(spacedUntil) ? String(spacedUntil) : "0",
                ...sends,
              ]) as unknown[];
              const turn = takeTurn(state, ask, now, limit);
              state = turn.state;
              if (turn.granted > 0) lastGrant.set(ask.holder, now);
              unanswered.push(...sends.slice(0, turn.granted));
              deepStrictEqual(
                {
                  granted: Number(reply[0]),
                  wait: Number(reply[1]),
                  line: await lineOf(keys, now),
                  now: Number(reply[5]),
                },
                {
                  granted: turn.granted,
                  wait: turn.wait,
                  line: state.line.filter(([, lapses]) => lapses >= now)
                    .map(([id, , , live]) =>
                      `${id}${live === 0 ? " low" : ""}`
                    ),
                  now,
                },
                JSON.stringify({ requests, reserve, ask, now }),
              );
            }
          },
        ),
        { numRuns: 1000, seed: 7 },
      );
    } finally {
      client.close();
    }

    /** The line the script keeps: places not lapsed, in order, background ones marked. */
    async function lineOf(keys: string[], now: number) {
      const line: string[] = [];
      const ids = await client.command(["ZRANGE", keys[1]!, "0", "-1"]);
      for (const id of ids as string[]) {
        const lapses = await client.command(["HGET", keys[2]!, id]);
        const low = await client.command(["HGET", keys[2]!, `${id}|low`]);
        if (Number(lapses) >= now) {
          line.push(`${id}${low === "1" ? " low" : ""}`);
        }
      }
      return line;
    }
  },
);
