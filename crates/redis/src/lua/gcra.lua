-- GCRA rate limit, one call per check (the same algorithm as governor's).
-- KEYS[1]: the bucket; it holds the theoretical arrival time (TAT) in µs.
-- ARGV[1]: emission interval T in µs; ARGV[2]: tolerance tau = T * (burst - 1) in µs.
-- Returns 0 when the unit is taken, else how many µs until it would be.
-- The clock is Redis's own (TIME), so every instance agrees.
if redis.replicate_commands then redis.replicate_commands() end
local t = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
local earliest = tat - tau
if now < earliest then
  return earliest - now
end
local next_tat = math.max(tat, now) + t
-- Once the TAT has passed the bucket is full again and holds nothing: let
-- it expire then (a missing bucket reads as TAT = now, the same thing).
local ttl_ms = math.max(1, math.ceil((next_tat - now) / 1000))
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX', string.format('%.0f', ttl_ms))
return 0
