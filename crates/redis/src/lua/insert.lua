-- ARGV: owner, id, value (JSON), idle ms, max handles per owner.
-- Returns 1 when stored, 0 when the owner already holds the maximum.
local now = now_ms()
local idle = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', now))
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  return 0
end
redis.call('DEL', KEYS[1])
if idle > 0 then
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'value', ARGV[3], 'idle', ARGV[4])
  touch(ARGV[2], idle, now)
end
return 1
