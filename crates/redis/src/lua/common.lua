-- Prepended to the handle scripts. A handle is a hash at KEYS[1] (owner,
-- value, idle ms, and lock / lock_until while a modify runs); KEYS[2] is its
-- owner's sorted set of live ids scored by expiry in ms (Redis TIME).
if redis.replicate_commands then redis.replicate_commands() end

local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Restarts the idle clock of handle KEYS[1], member `id` of set KEYS[2].
local function touch(id, idle, now)
  redis.call('PEXPIRE', KEYS[1], idle)
  redis.call('ZADD', KEYS[2], string.format('%.0f', now + idle), id)
  if redis.call('PTTL', KEYS[2]) < idle then
    redis.call('PEXPIRE', KEYS[2], idle)
  end
end
