-- wrk script: tracking hits like the SDKs' (GET /r/?id=h<messageId>,<deliveryId>,<tag>), each
-- with a distinct message id; tags alternate 1 (received) and 2 (opened).
-- DELIVERY (environment) is the delivery id used for every hit.
local delivery = os.getenv("DELIVERY") or "bench"
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() + thread_id * 7919)
  prefix = string.format("%08x-%04x-4%03x", math.random(0, 0x7fffffff), thread_id, math.random(0, 0xfff))
end

request = function()
  counter = counter + 1
  local message = prefix .. string.format("-8000-%012x", counter)
  return wrk.format("GET", "/r/?id=h" .. message .. "," .. delivery .. "," .. (counter % 2 + 1))
end

done = function(summary, latency, requests)
  io.write(string.format("result requests=%d non2xx=%d errors=%d p50_ms=%.2f p99_ms=%.2f\n",
    summary.requests, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
