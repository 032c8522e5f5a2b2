"""What the class store on Redis runs inside Redis as one step (Lua scripts): a rate limit,
a student joining, a student answering. Another server's request cannot come between
their reads and writes, as a transaction in the SQLite store. Key names are in
``redis_keys``.
"""

# A rate limit's fixed window, as the SQLite store counts it: at most `most` hits per window
# of `window` seconds from the first; returns the seconds to wait ("0": go ahead, counted
# when `count` is 1). Numbers go back to Python as text (Redis would cut them to integers).
HIT = """
local function wait(key, now, window, most)
  local h = redis.call('HMGET', key, 'start', 'n')
  local start, n = tonumber(h[1]), tonumber(h[2])
  if not start or now - start >= window then start, n = now, 0 end
  if n >= most then return start + window - now, start, n end
  return 0, start, n
end
local function count(key, start, n, window)
  redis.call('HSET', key, 'start', string.format('%.6f', start), 'n', n + 1)
  redis.call('EXPIRE', key, math.ceil(window) + 60)
end
"""
HIT_ONE = HIT + """
local w, start, n = wait(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
if w == 0 and ARGV[4] == '1' then count(KEYS[1], start, n, tonumber(ARGV[2])) end
return string.format('%.6f', w)
"""
# A student joins (or joins again, keeping their place and answers; a new nickname replaces
# the old). KEYS: class, students, nicks. ARGV: id, nickname, now, most students, ttl.
JOIN = """
local h = redis.call('HMGET', KEYS[1], 'expires', 'ended')
if not h[1] or tonumber(h[1]) <= tonumber(ARGV[3]) then return 'gone' end
if h[2] == '1' then return 'ended' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
  if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then return 'full' end
  redis.call('HSET', KEYS[2], ARGV[1], redis.call('HINCRBY', KEYS[1], 'joins', 1))
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 'ok'
"""
# A student's answer to the current question. KEYS: class, students, answers, the student's
# and the client's rate limits. ARGV: id, question, value, now, window, most per student,
# most per client, the seconds a class's keys outlive it. Nothing is counted when an
# answer is refused.
ANSWER = HIT + """
local now, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local h = redis.call('HMGET', KEYS[1], 'expires', 'ended', 'question', 'revealed')
if not h[1] or tonumber(h[1]) <= now then return {'gone'} end
if h[2] == '1' then return {'ended'} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return {'stranger'} end
if h[3] ~= ARGV[2] or h[4] == '1' then return {'closed'} end
local ws, ss, ns = wait(KEYS[4], now, window, tonumber(ARGV[6]))
if ws > 0 then return {'wait', string.format('%.6f', ws)} end
local wc, sc, nc = wait(KEYS[5], now, window, tonumber(ARGV[7]))
if wc > 0 then return {'wait', string.format('%.6f', wc)} end
count(KEYS[4], ss, ns, window)
count(KEYS[5], sc, nc, window)
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[3], math.max(1, math.ceil(tonumber(h[1]) - now) + tonumber(ARGV[8])))
return {'ok'}
"""
