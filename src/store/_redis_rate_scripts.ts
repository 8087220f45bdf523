// The fleet window's rules (_window_rules.ts) in Lua, on Redis's clock. Each script first replaces what is not ours
// (another type, a bad number, a block or send too far ahead): it would fail every take, or hold the fleet off.

// KEYS: 1 window (sorted set: send -> ms it counts from), 2 line (sorted set: holder -> turn), 3 places (hash: holder
// -> ms its place lapses), 4 holders (sorted set: holder -> ms last seen), 5 turns (counter), 6 block (ms before which
// nobody sends, after a refusal), 7 epoch (hash: id of this life of the window; short, reseeded: slots kept for sends
// the store lost, see _window_rules.ts; whole: this life began on a window that outlived its epoch; until: when the
// window's last send leaves). ARGV: 1 requests, 2 interval, 3 hold, 4 grace, 5 an epoch id to start with if the window
// has none; then each script's own.

const NOW = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
`;

// Notes in the epoch hash until when the window holds a send: before then it cannot empty by itself.
const mark = (window: string, epoch: string) =>
  `local function mark()
  local last = redis.call('ZREVRANGEBYSCORE', ${window}, now + hold, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
  if last then redis.call('HSET', ${epoch}, 'until', tonumber(last) + interval)
  else redis.call('HDEL', ${epoch}, 'until') end
end
`;

const GUARD =
  `${NOW}local requests, interval = tonumber(ARGV[1]), tonumber(ARGV[2])
local hold, grace = tonumber(ARGV[3]), tonumber(ARGV[4])
local share = math.ceil(interval / requests)
local function num(value)
  local n = tonumber(value)
  if n and n == n and n > -1e15 and n < 1e15 then return n end
end
local kinds = {'zset', 'zset', 'hash', 'zset', 'string', 'string', 'hash'}
local lost = false
for i = 1, #KEYS do
  local kind = redis.call('TYPE', KEYS[i]).ok
  if kind ~= 'none' and kind ~= kinds[i] then
    redis.call('DEL', KEYS[i])
    if i == 1 then lost = true end
  end
end
local turns = redis.call('GET', KEYS[5])
if turns and not (string.match(turns, '^%d+$') and #turns < 16) then
  redis.call('DEL', KEYS[5])
end
local block = num(redis.call('GET', KEYS[6]) or '0')
if not block then block = 0; redis.call('DEL', KEYS[6]) end
if block > now + share then
  block = now + share
  redis.call('SET', KEYS[6], block, 'PX', share)
end
-- A send dated past the hold was never written by a take: dropped.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. (now + hold), '+inf')
redis.call('ZREMRANGEBYSCORE', KEYS[4], '(' .. now, '+inf')
if redis.call('ZCARD', KEYS[2]) > 1000 then redis.call('DEL', KEYS[2], KEYS[3]) end
local epoch = redis.call('HGET', KEYS[7], 'id')
-- A window gone while its epoch says a send is still in it was lost (an
-- eviction can pick one key of two): short of its sends at once.
local fell = epoch and redis.call('EXISTS', KEYS[1]) == 0 and (num(redis.call('HGET', KEYS[7], 'until')) or 0) > now
if fell or lost or not epoch or #epoch > 64 then
  -- An epoch gone while its window holds sends lost nothing the window says (no take writes a send
  -- without an epoch): the window goes on whole, the truth of what was sent.
  local whole = not fell and not lost and redis.call('EXISTS', KEYS[1]) == 1
  redis.call('DEL', KEYS[7])
  epoch = ARGV[5]
  redis.call('HSET', KEYS[7], 'id', epoch)
  if fell then redis.call('HSET', KEYS[7], 'short', now + interval + grace) end
  if whole then redis.call('HSET', KEYS[7], 'whole', '1') end
end
-- While the window is short of what it lost: only as many as written back.
local short = math.min(num(redis.call('HGET', KEYS[7], 'short')) or 0, now + interval + grace)
local reseeded = num(redis.call('HGET', KEYS[7], 'reseeded')) or 0
local capacity = requests
if short > now then capacity = math.min(requests, reseeded) end
${mark("KEYS[1]", "KEYS[7]")}local function keep()
  mark()
  for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], interval + hold + grace) end
end
`;

// ARGV: 6 holder, 7 the epoch it knows, 8 '1' when it paced alone, 9 '1' when the sends are background ones, 10 the
// reserve, 11 while others wait in line no send before this (Redis ms: a slot's share after the holder's last; 0:
// none), then the sends wanted. Answers {granted, wait, holders, epoch, reseed, now}. A place in line waiting for
// background sends only is marked in the places hash (`<holder>|low`): ahead of a live take stand live places only, and
// a background take gets nothing while a live place waits elsewhere, nor the last `reserve` slots.
export const TAKE = `${GUARD}local holder, known = ARGV[6], ARGV[7]
local low, reserve = ARGV[9] == '1', tonumber(ARGV[10]) or 0
local want = #ARGV - 11
-- A spacing further ahead than a share was dated on another clock (a Redis failed over, behind): none. Cut back to a
-- share, it held every process a share at each take for as long as the clock was behind (attack r209a F1).
local spaced = num(ARGV[11]) or 0
if spaced > now + share then spaced = 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - interval)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - interval)
redis.call('ZADD', KEYS[4], now, holder)
-- Places that lapsed (or lapse too far ahead) leave the line; ahead of a live take stand live places only.
local line, place, ownLow, liveElsewhere, liveTurn = 0, nil, false, false, interval + hold
for _, other in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local lapses = num(redis.call('HGET', KEYS[3], other)) or -1
  local otherLow = redis.call('HGET', KEYS[3], other .. '|low') == '1'
  if lapses < now or lapses > now + interval + hold + grace then
    redis.call('ZREM', KEYS[2], other)
    redis.call('HDEL', KEYS[3], other, other .. '|low')
  else
    if other ~= holder and not otherLow then
      liveElsewhere = true
      liveTurn = math.min(liveTurn, lapses - grace - now)
    end
    if other == holder then ownLow = otherLow end
    -- A live take's own background place is no place among the live ones: it joins behind them.
    if low or not otherLow then
      if other == holder then place = line end
      line = line + 1
    end
  end
end
-- keep() once per take: here for the early answer, at the end otherwise (nothing between reads what it writes).
if ARGV[8] == '1' or (known ~= '' and known ~= epoch) then
  keep()
  return {0, 0, redis.call('ZCARD', KEYS[4]), epoch, 1, now}
end
local free = capacity - redis.call('ZCARD', KEYS[1])
if block > now then free = 0 end
if low then free = liveElsewhere and 0 or free - reserve end
local ahead = place or line
-- While others wait in line, one send per turn: turns, not callers, are fair.
local most = want
local othersWait = line > (place and 1 or 0)
if othersWait then most = 1 end
if not othersWait or spaced <= now then spaced = 0 end
local granted = math.max(0, math.min(most, want, free - ahead))
if spaced > 0 then granted = 0 end
for i = 1, granted do redis.call('ZADD', KEYS[1], now + hold, ARGV[11 + i]) end
local wait = 0
if granted == want then
  -- A live take served in full keeps its process's background place: its crawl still waits.
  if low or granted == 0 or not ownLow then
    redis.call('ZREM', KEYS[2], holder)
    redis.call('HDEL', KEYS[3], holder, holder .. '|low')
  end
else
  local position = place
  if granted > 0 or not place then
    redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), holder)
    position = line - (place and 1 or 0)
  end
  if low then redis.call('HSET', KEYS[3], holder .. '|low', '1') else redis.call('HDEL', KEYS[3], holder .. '|low') end
  if low and liveElsewhere then
    -- The live ones go first: ask again at the first one's turn, at least a share from now (past any block).
    wait = math.max(1, share, liveTurn)
  elseif block > now then
    wait = block - now
  else
    -- Its turn is now, or when the (index + 1)-th send leaves.
    local index = position - (free - granted)
    local send = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
    local from = tonumber(send[2] or '-1')
    if index < 0 then
      wait = 1
    elseif not send[2] then
      -- Beyond what a short window holds: more may be written back soon.
      if short > now then wait = math.max(1, math.min(short - now, math.max(share, grace))) else wait = interval end
    elseif from > now then
      -- Unanswered: it leaves no sooner than an interval from now.
      wait = interval
    else
      wait = math.max(1, from + interval - now)
    end
  end
  wait = math.max(wait, spaced - now)
  redis.call('HSET', KEYS[3], holder, now + wait + grace)
end
keep()
return {granted, wait, redis.call('ZCARD', KEYS[4]), epoch, 0, now}`;

// ARGV: 6 the epoch known, 7 '1' if it took within the last interval and hold, then pairs of a send and ms since its
// answer (-1: unanswered). Answers the sends written; see reseedSends.
export const RESEED = `${GUARD}local known = ARGV[6]
local added = 0
for i = 8, #ARGV - 1, 2 do
  local age = num(ARGV[i + 1])
  if age and age < interval then
    local from = age < 0 and now + hold or now - age
    added = added + redis.call('ZADD', KEYS[1], 'NX', from, ARGV[i])
  end
end
-- A member from an older epoch finds the window lost, unless this epoch went on with it whole: a window
-- that lacked the member's sends was not (it was lost before the epoch, and is being rebuilt).
local whole = redis.call('HEXISTS', KEYS[7], 'whole') == 1 and added == 0
if known ~= '' and known ~= epoch and ARGV[7] == '1' and short == 0 and not whole then
  short = now + interval + grace
  redis.call('HSET', KEYS[7], 'short', short)
end
if short > now then redis.call('HSET', KEYS[7], 'reseeded', reseeded + added) end
keep()
return added`;

// KEYS: window, epoch; ARGV: interval, hold, then the sends. Each counts from now, if it still waits.
export const ANSWER =
  `if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end
${NOW}local interval, hold = tonumber(ARGV[1]), tonumber(ARGV[2])
${mark("KEYS[1]", "KEYS[2]")}for i = 3, #ARGV do
  local from = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if from and tonumber(from) > now then redis.call('ZADD', KEYS[1], now, ARGV[i]) end
end
if redis.call('TYPE', KEYS[2]).ok == 'hash' then mark() end
return 0`;

// KEYS: window, block; ARGV: requests, interval. A window with room is full for one slot's share.
export const REFUSE =
  `${NOW}local requests, interval = tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then redis.call('DEL', KEYS[1]) end
if redis.call('TYPE', KEYS[2]).ok ~= 'string' then redis.call('DEL', KEYS[2]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - interval)
if redis.call('ZCARD', KEYS[1]) >= requests then return 0 end
-- (A block further ahead than this is not ours: replaced, not kept.)
local share = math.ceil(interval / requests)
redis.call('SET', KEYS[2], now + share, 'PX', share)
return 0`;
