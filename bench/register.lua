-- wrk script: form POSTs like the iOS SDK's, each with a distinct APNs token.
-- KEY (environment) is the app's integration key.
local key = os.getenv("KEY") or "missing-key"
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() + thread_id * 7919)
  prefix = string.format("%08x%08x", thread_id, math.random(0, 0x7fffffff))
end

request = function()
  counter = counter + 1
  local token = prefix .. string.format("%048x", counter)
  local body = "registrationToken=" .. token .. "&mobileAppUuid=" .. key ..
    "&userKey=bench&deviceName=Bench%20iPhone&deviceModel=iPhone&deviceBrand=Apple&deviceManufacturer=Apple" ..
    "&osName=iOS&osVersion=iOS%2017.0&osLanguage=en-US" ..
    "&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22email%22%20value%3D%22a%40b.c%22%20%2F%3E%3C%2FadditionalParams%3E"
  return wrk.format("POST", nil, {["Content-Type"] = "application/x-www-form-urlencoded;charset=UTF-8"}, body)
end

done = function(summary, latency, requests)
  io.write(string.format("result requests=%d non2xx=%d errors=%d p50_ms=%.2f p99_ms=%.2f\n",
    summary.requests, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
