-- Stores a new task unless its owner has the most unfinished ones.
-- KEYS[1]: the task hash; KEYS[2]: the owner's sorted set of unfinished
-- task ids, scored by the last ms at which each counts.
-- ARGV: id, record (JSON), now ms, max unfinished, score, key ttl ms (0: none).
-- Returns 1 when stored, 0 when the owner is full.
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[3])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'record', ARGV[2])
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
-- A task whose lease already ran out does not count.
local keep = tonumber(ARGV[5]) - now + 1
if keep > 0 then
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
  if redis.call('PTTL', KEYS[2]) < keep then
    redis.call('PEXPIRE', KEYS[2], string.format('%.0f', keep))
  end
end
return 1
