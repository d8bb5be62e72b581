-- Unlocks a handle whose modify did not finish, if this token holds it.
-- KEYS[1]: the handle; ARGV[1]: lock token. Returns 1 when unlocked, else 0.
if redis.call('HGET', KEYS[1], 'lock') ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[1], 'lock', 'lock_until')
return 1
