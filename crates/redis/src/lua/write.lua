-- The second half of a modify: writes the new value and unlocks, only if
-- this token still holds the lock (compare-and-set on the token).
-- ARGV: id, lock token, value (JSON). Returns 1 when written, else 0.
local h = redis.call('HMGET', KEYS[1], 'lock', 'idle')
if h[1] ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'value', ARGV[3])
redis.call('HDEL', KEYS[1], 'lock', 'lock_until')
touch(ARGV[1], tonumber(h[2]), now_ms())
return 1
