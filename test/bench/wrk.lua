-- wrk script of the benchmark (test/bench/bench.mjs):
--
--   wrk -t1 -cN -dTs --timeout 10s -s test/bench/wrk.lua [-H 'Authorization: Bearer KEY'] URL -- METHOD [BODY [EXPECT]]
--
-- METHOD and BODY make the request (BODY is sent as application/json). Every answer is checked: a status outside
-- 2xx counts as non-2xx, a 2xx answer whose body lacks the substring EXPECT counts as a bad body. done() prints one
-- line, "WRK_JSON {...}", with the counts, wrk's socket errors and the latency percentiles in milliseconds.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  wrk.method = args[1] or "GET"
  if args[2] and args[2] ~= "" then
    wrk.body = args[2]
    wrk.headers["Content-Type"] = "application/json"
  end
  expect = args[3]
  if expect == "" then expect = nil end
  ok = 0
  non2xx = 0
  bad = 0
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  elseif expect and not (body and string.find(body, expect, 1, true)) then
    bad = bad + 1
  else
    ok = ok + 1
  end
end

function done(summary, latency, requests)
  local n_ok, n_non2xx, n_bad = 0, 0, 0
  for _, t in ipairs(threads) do
    n_ok = n_ok + t:get("ok")
    n_non2xx = n_non2xx + t:get("non2xx")
    n_bad = n_bad + t:get("bad")
  end
  local e = summary.errors
  local ms = function(p) return latency:percentile(p) / 1000 end
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"ok":%d,"non2xx":%d,"bad_bodies":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_ms":{"p50":%.3f,"p90":%.3f,"p99":%.3f,"mean":%.3f,"max":%.3f}}\n',
    summary.requests, summary.duration, n_ok, n_non2xx, n_bad,
    e.connect, e.read, e.write, e.status, e.timeout,
    ms(50), ms(90), ms(99), latency.mean / 1000, latency.max / 1000))
end
