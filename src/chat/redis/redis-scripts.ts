/**
 * The Lua scripts of the Redis bus, each one atomic step of Redis. Keys are passed whole (ARGV, after
 * the deployment's prefix), so ioredis adds no prefix of its own. The scripts write no chat frame of
 * their own: a frame they publish comes in their arguments, written by the codec (src/protocol).
 */
import type { Redis } from 'ioredis';

const SCRIPTS = {
  /**
   * The joins (HSET) and leaves (HDEL) of one turn in this instance's member hash, in order (a triple of
   * ARGV each from ARGV[4]: op, member, record), and their one publication.
   */
  rosterPresence: `
    for i = 4, #ARGV, 3 do
      if ARGV[i] == 'j' then redis.call('HSET', ARGV[1], ARGV[i + 1], ARGV[i + 2]) else redis.call('HDEL', ARGV[1], ARGV[i + 1]) end
    end
    return redis.call('PUBLISH', ARGV[2], ARGV[3])`,
  /**
   * A chat into the history, published with its id between ARGV[5] and ARGV[6]. The stream is capped
   * at ARGV[2] entries and at ARGV[8] bytes of messages, whose running total is kept in ARGV[7]
   * (XADD's MAXLEN counts entries only): the oldest entries go until both hold, the newest always stays.
   */
  rosterChat: `
    local function size(fields)
      for i = 1, #fields, 2 do if fields[i] == 'm' then return #fields[i + 1] end end
      return 0
    end
    if redis.call('EXISTS', ARGV[7]) == 0 then
      -- No total yet (a stream from before it was kept, or the total lost): counted once from the stream.
      local total = 0
      for _, entry in ipairs(redis.call('XRANGE', ARGV[1], '-', '+')) do total = total + size(entry[2]) end
      redis.call('SET', ARGV[7], total)
    end
    local id = redis.call('XADD', ARGV[1], '*', 'm', ARGV[3])
    local length = redis.call('XLEN', ARGV[1])
    local bytes = redis.call('INCRBY', ARGV[7], #ARGV[3])
    local maxlen, maxbytes = tonumber(ARGV[2]), tonumber(ARGV[8])
    while length > 1 and (length > maxlen or bytes > maxbytes) do
      local oldest = redis.call('XRANGE', ARGV[1], '-', '+', 'COUNT', 1)[1]
      redis.call('XDEL', ARGV[1], oldest[1])
      length = length - 1
      bytes = redis.call('DECRBY', ARGV[7], size(oldest[2]))
    end
    -- The newest alone: the total is its size, whatever a lost or stale total said.
    if length == 1 then redis.call('SET', ARGV[7], #ARGV[3]) end
    redis.call('PUBLISH', ARGV[4], ARGV[5] .. id .. ARGV[6])
    return id`,
  /** The heartbeat: alive for ttl more, listed, and the count published. */
  rosterBeat: `
    redis.call('SET', ARGV[1], '1', 'PX', ARGV[2])
    redis.call('SADD', ARGV[3], ARGV[4])
    return redis.call('PUBLISH', ARGV[5], ARGV[6])`,
  /** On (re)connecting: the member hash written anew, alive, listed, the history's origin, hello. */
  rosterSync: `
    redis.call('DEL', ARGV[1])
    for i = 10, #ARGV, 2 do redis.call('HSET', ARGV[1], ARGV[i], ARGV[i + 1]) end
    redis.call('SET', ARGV[2], '1', 'PX', ARGV[3])
    redis.call('SADD', ARGV[4], ARGV[5])
    if tonumber(ARGV[9]) > 0 and redis.call('EXISTS', ARGV[8]) == 0 then redis.call('XADD', ARGV[8], '*', 'o', '1') end
    return redis.call('PUBLISH', ARGV[6], ARGV[7])`,
  /** A clean stop, after its members' leaves: nothing of this instance left, and goodbye. */
  rosterBye: `
    redis.call('DEL', ARGV[1], ARGV[2])
    redis.call('SREM', ARGV[3], ARGV[4])
    return redis.call('PUBLISH', ARGV[5], ARGV[6])`,
  /**
   * The reaper: every listed instance but the caller whose alive key is gone has each member's leave
   * published on its behalf (\`r\`), in join order, its count stepping down; then its goodbye. The
   * leave is the codec's frame, handed over cut where the count goes (ARGV[5] .. count .. ARGV[6]).
   * A record cjson cannot read (it refuses lone surrogates, which JSON.stringify writes as escapes) is
   * reaped all the same, first: one bad record must not stop the script on every run.
   */
  rosterReap: `
    local reaped = 0
    for _, id in ipairs(redis.call('SMEMBERS', ARGV[1])) do
      if id ~= ARGV[2] and redis.call('EXISTS', ARGV[4] .. 'alive:' .. id) == 0 then
        local hash = ARGV[4] .. 'members:' .. id
        local all = redis.call('HGETALL', hash)
        local list = {}
        for i = 1, #all, 2 do
          local ok, record = pcall(cjson.decode, all[i + 1])
          local seq = ok and type(record) == 'table' and tonumber(record.seq) or 0
          table.insert(list, { all[i], seq })
        end
        table.sort(list, function(a, b) return a[2] < b[2] end)
        local remaining = #list
        for _ = 1, #list do
          remaining = remaining - 1
          redis.call('PUBLISH', ARGV[3], '{"i":"' .. id .. '","n":' .. remaining .. ',"r":1,"m":' .. ARGV[5] .. remaining .. ARGV[6] .. '}')
        end
        redis.call('DEL', hash)
        redis.call('SREM', ARGV[1], id)
        redis.call('PUBLISH', ARGV[3], '{"i":"' .. id .. '","n":0,"b":1,"r":1}')
        reaped = reaped + #list
      end
    end
    return reaped`,
  /** The history a joining member asked for: the oldest and newest ids kept, and the entries. */
  rosterRead: `
    local first = redis.call('XRANGE', ARGV[1], '-', '+', 'COUNT', 1)
    local last = redis.call('XREVRANGE', ARGV[1], '+', '-', 'COUNT', 1)
    local entries
    if ARGV[2] == 's' then entries = redis.call('XRANGE', ARGV[1], '(' .. ARGV[3], '+')
    else entries = redis.call('XREVRANGE', ARGV[1], '+', '-', 'COUNT', ARGV[3]) end
    return { first, last, entries }`,
  /** Every listed instance's members: id, fields and values, id, … */
  rosterMembers: `
    local out = {}
    for _, id in ipairs(redis.call('SMEMBERS', ARGV[1])) do
      table.insert(out, id)
      table.insert(out, redis.call('HGETALL', ARGV[2] .. 'members:' .. id))
    end
    return out`,
} as const;

/** A connection that runs the scripts as commands of their own names. */
export type Scripted = Redis & Record<keyof typeof SCRIPTS, (...args: (string | number)[]) => Promise<unknown>>;

/** `redis` with every script defined on it. */
export function withScripts(redis: Redis): Scripted {
  for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 0, lua });
  return redis as Scripted;
}

/** A stream entry as XRANGE replies: its id and its fields and values. */
export type StreamEntry = [string, string[]];
