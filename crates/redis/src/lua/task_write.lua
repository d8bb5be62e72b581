-- The second half of an update: writes the record and unlocks, only if
-- this token still holds the lock; keeps the owner's set of unfinished
-- tasks right. The key's expiry (the task's time to live) is left as is.
-- KEYS[1]: the task hash; KEYS[2]: the owner's set.
-- ARGV: id, lock token, record (JSON), now ms, score (-1: finished).
-- Returns 1 when written, else 0.
if redis.call('HGET', KEYS[1], 'lock') ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'record', ARGV[3])
redis.call('HDEL', KEYS[1], 'lock', 'lock_until')
local score = tonumber(ARGV[5])
if score < 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
local keep = score - tonumber(ARGV[4]) + 1
if keep > 0 and redis.call('PTTL', KEYS[2]) < keep then
  redis.call('PEXPIRE', KEYS[2], string.format('%.0f', keep))
end
return 1
