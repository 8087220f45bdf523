// How the Redis store and limiter talk to Redis, and the token store's scripts, also as plain commands for a Redis that
// refuses EVAL (else each process would spend its own token). Plain commands keep the lease (SET NX PX) but cannot
// check-and-write: a process stalled past its lease may let the next one's go, and two ledger writes at one moment may lose one.

import type { RedisCommand } from "./redis_command.ts";
import { MAX_STORED_RECORD } from "./_record.ts";
import {
  checkNumber,
  requireOptions,
  requireText,
  typeError,
} from "../core/_check.ts";
import { answerWithin } from "../core/_deadlines.ts";

/** The checked `command`, `prefix` and `commandTimeout` the store and the limiter take. */
export function redisOptions(
  options: { command: RedisCommand; prefix?: string; commandTimeout?: number },
  context: string,
  prefix: string,
): { command: RedisCommand; prefix: string; commandTimeout: number } {
  requireOptions(options, context); // a string, null or array given as them is named as such, before `command`
  const command = options.command;
  if (typeof command !== "function") {
    throw typeError(context, "command", "must be a function", typeof command);
  }
  return {
    command,
    prefix: options.prefix === undefined
      ? prefix
      : requireText(options.prefix, context, "prefix"),
    commandTimeout: checkNumber(
      options.commandTimeout,
      2000,
      "positive whole time in ms, at most 2147483647",
      context,
      "commandTimeout",
    ),
  };
}

/** Sends one command within `ms`: a client queueing while Redis is away must not hold every caller. */
export function sendWithin(command: RedisCommand, args: string[], ms: number) {
  const late = `Redis did not answer ${args[0]} in time`;
  return answerWithin(() => command(args), ms, late);
}

/** A reply as text: clients answer strings, or bytes when asked to. */
export function text(reply: unknown): string | undefined {
  if (typeof reply === "string") return reply;
  if (reply instanceof Uint8Array) return new TextDecoder().decode(reply);
  return undefined;
}

/** The store's scripts, by what they do. */
export type ScriptName = "take" | "swap" | "renew" | "publish" | "release";

// TAKE, SWAP and PUBLISH first drop a key of another type among `keys` (a take held every process off for good) and a
// record past the bound: neither holds a record.
const unreadable = (keys: string) =>
  `for _, key in ipairs(${keys}) do
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'none' and kind ~= 'string' then redis.call('DEL', key) end
end
if redis.call('STRLEN', KEYS[1]) > ${MAX_STORED_RECORD} then redis.call('DEL', KEYS[1]) end`;
// PUBLISH and RELEASE let the lease go and tell its waiters (XREAD on KEYS[3]) what was published
// (ARGV[2], else ''), then leave the stream to expire.
const RELEASED = `redis.call('DEL', KEYS[2])
redis.call('XADD', KEYS[3], '*', 'record', ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1`;
export const SCRIPTS: Record<ScriptName, string> = {
  // Each script acts only if a value is still the one this process saw or wrote. An unreadable record
  // (ARGV[4] '1') may be taken over while it is no sealed record. Taken by another, it answers who holds it.
  take: `${unreadable("KEYS")}
local record = redis.call('GET', KEYS[1]) or ''
if record ~= ARGV[1] and (ARGV[4] ~= '1' or
  string.find(record, '"sealed"', 1, true)) then return 0 end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return 1 end
return redis.call('GET', KEYS[2]) or 0`,
  swap: `${unreadable("KEYS")}
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`,
  renew: `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`,
  // The lease, then the record as the holder read it (ARGV[5], ARGV[6] as the take's ARGV[1], ARGV[4]): -1, read again.
  publish: `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
${unreadable("{KEYS[1]}")}
local record = redis.call('GET', KEYS[1]) or ''
if record ~= ARGV[5] and (ARGV[6] ~= '1' or
  string.find(record, '"sealed"', 1, true)) then return -1 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
${RELEASED}`,
  release: `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
${RELEASED}`,
};

/** A lease's value: a new UUID, a space, then `holder` (what a take answers when another holds the lease). */
export function leaseValue(holder: string): string {
  return `${crypto.randomUUID()} ${holder}`;
}

/** A text a take answers only as a lease's value: any other ("QUEUED" from a pipeline, "OK", "") is no holder. */
const LEASE_VALUE =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} /;

/** Whether a reply is one the script gives, for the scripts whose reply decides a retry or a wait. */
const REPLIES: Partial<Record<ScriptName, (reply: unknown) => boolean>> = {
  take: (reply) =>
    reply === 0 || reply === 1 || LEASE_VALUE.test(text(reply) ?? ""),
  swap: (reply) => reply === 0 || reply === 1,
  publish: (reply) => reply === -1 || reply === 0 || reply === 1,
};

/**
 * `reply` to EVAL of `name`, if one the script gives. Another (a stand-in that runs no script, a pipeline's "QUEUED")
 * fails at once: else set() tried again 100 times, or coordinate() polled until maxWait. Named by its type only.
 */
export function scriptReply(name: ScriptName, reply: unknown): unknown {
  if (REPLIES[name]?.(reply) ?? true) return reply;
  const rule =
    "must resolve EVAL with the script's reply, or reject it with Redis's 'unknown command' (then plain commands go)";
  throw typeError("Redis token store", "command", rule, typeOf(reply));
}

/** The holder a lease's GET names, if any; another text fails at once, as `scriptReply`'s ("QUEUED" cost a token each). */
export function leaseHolder(reply: unknown): string | undefined {
  const holder = text(reply);
  if (holder === undefined || LEASE_VALUE.test(holder)) return holder;
  const rule = "must resolve GET with the value Redis holds";
  throw typeError("Redis token store", "command", rule, typeOf(reply));
}

/** A reply's type, never its text: a reply may hold a token. */
function typeOf(reply: unknown): string {
  return reply === null ? "null" : typeof reply;
}

/** One script's steps in plain commands; KEYS and ARGV as the script's, `send` within the store's time limit. */
type Steps = (
  keys: readonly string[],
  args: readonly string[],
  send: RedisCommand,
) => Promise<unknown>;

/** A script's effect with plain commands: the same KEYS and ARGV, the same answer. */
export function plainScript(name: ScriptName, ...steps: Parameters<Steps>) {
  return { take, swap, renew, publish, release }[name](...steps);
}

/** The record (`keys[0]`) as the take and swap scripts first read it: `keys` of another type dropped. */
async function readableText(keys: readonly string[], send: RedisCommand) {
  for (const key of keys) {
    const kind = text(await send(["TYPE", key]));
    if (kind !== "none" && kind !== "string") await send(["DEL", key]);
  }
  return await recordText(keys[0]!, send);
}

/** The record as the take script compares it: '' when absent or too large. */
async function recordText(key: string, send: RedisCommand) {
  if (Number(await send(["STRLEN", key])) > MAX_STORED_RECORD) {
    await send(["DEL", key]);
    return "";
  }
  return text(await send(["GET", key])) ?? "";
}

/** KEYS record, lease; ARGV seen, lease value, ms, '1' if unreadable. Takes the lease if the record is unchanged. */
const take: Steps = async (keys, args, send) => {
  const [record, lease] = keys as [string, string];
  const [seen, value, ms, unreadable] = args;
  const changed = changedFrom(seen, unreadable);
  if (changed(await readableText(keys, send))) return 0;
  if (await send(["SET", lease, value!, "NX", "PX", ms!]) === null) {
    return text(await send(["GET", lease])) ?? 0;
  }
  if (!changed(await recordText(record, send))) return 1;
  await release([record, lease], [value!], send);
  return 0;
};

/** KEYS record; ARGV seen, value, ms. */
const swap: Steps = async ([record], [seen, value, ms], send) => {
  if (await readableText([record!], send) !== seen) return 0;
  await send(["SET", record!, value!, "PX", ms!]);
  return 1;
};

/** KEYS lease; ARGV lease value, ms. */
const renew: Steps = async ([lease], [value, ms], send) => {
  if (text(await send(["GET", lease!])) !== value) return 0;
  return await send(["PEXPIRE", lease!, ms!]);
};

/** Whether a record's text changed since `seen` was read; `unreadable` ('1'): it may be replaced while it is no sealed record. */
function changedFrom(seen: string | undefined, unreadable: string | undefined) {
  return (text: string) =>
    text !== seen && (unreadable !== "1" || text.includes('"sealed"'));
}

/** KEYS record, lease, stream; ARGV lease value, record value, ms, stream ms, and the take's seen and unreadable. */
const publish: Steps = async (keys, args, send) => {
  const [record, lease] = keys as [string, string];
  if (text(await send(["GET", lease])) !== args[0]) return 0;
  const changed = changedFrom(args[4], args[5]);
  if (changed(await readableText([record], send))) return -1;
  await send(["SET", record, args[1]!, "PX", args[2]!]);
  return await release(keys, args, send);
};

/** KEYS record, lease[, stream]; ARGV lease value[, record, ms, stream ms]. */
const release: Steps = async ([, lease, stream], args, send) => {
  if (text(await send(["GET", lease!])) !== args[0]) return 0;
  await send(["DEL", lease!]);
  if (stream !== undefined) {
    // Waiters blocked on the lease's stream are woken as by the script.
    await send(["XADD", stream, "*", "record", args[1] ?? ""]);
    await send(["PEXPIRE", stream, args[3] ?? "1000"]);
  }
  return 1;
};
