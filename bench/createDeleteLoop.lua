-- wrk script for apiLoad.bench.ts: durable creates over kept-alive connections, each followed by the
-- delete of a node created before it on the same wrk thread, so that at most one node per
-- connection holds a place in the pool (its limit is 100 nodes). wrk is C: the load generator then
-- takes a small part of the machine, where autocannon takes most of a core.
--   wrk -t1 -c60 -d5s -s bench/createDeleteLoop.lua http://127.0.0.1:PORT -- TOKEN CLUSTER POOL
local threads = {}

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

local path, pool, prefix
local next_id = 0
local created = {}
creates, deletes, failures = 0, 0, 0

function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  wrk.headers["Content-Type"] = "application/json"
  path = "/api/v1/clusters/" .. args[2] .. "/nodes"
  pool = args[3]
  prefix = "wrk-" .. thread_index .. "-"
end

function request()
  local node = table.remove(created)
  if node then
    return wrk.format("DELETE", path .. "/" .. node, nil, nil)
  end
  next_id = next_id + 1
  return wrk.format("POST", path, nil, '{"uniqueID":"' .. prefix .. next_id .. '","pool":"' .. pool .. '"}')
end

function response(status, headers, body)
  if status == 201 then
    creates = creates + 1
    table.insert(created, body:match('"nodeID":"([^"]+)"'))
  elseif status == 202 then
    deletes = deletes + 1
  else
    failures = failures + 1
  end
end

function done(summary, latency, requests)
  local c, d, f = 0, 0, 0
  for _, thread in ipairs(threads) do
    c = c + thread:get("creates")
    d = d + thread:get("deletes")
    f = f + thread:get("failures")
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"creates":%d,"deletes":%d,"failures":%d,"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d,"socketErrors":%d}\n',
    c, d, f, summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout))
end
