-- wrk script for bench/run: sends exactly the requests in a file that `bench/lib.sh`'s
-- `gen_requests` wrote (vault-seed's requests for one case, in its order), each once, then stops.
-- One wrk thread (`-t 1`); the connections (`-c`) are the concurrency.
--
--   wrk -t 1 -c 16 -d 3600 --timeout 60s -s bench/wrk/seed.lua ADDR -- REQUESTS_FILE TOKEN [CONNS]
--
-- A line of the file: `METHOD PATH BODY` (PATH under /v1/, BODY compact JSON or `-`). wrk sends
-- the next request as soon as a connection is free: vault-seed's requests without its barriers.
--
-- Two ways to run, which bench/run shows side by side:
-- - checked (no CONNS): `response()` sees every answer, counts the statuses, and stops wrk at the
--   last one. wrk then parses every answer's headers and body into Lua values for it, work its
--   one thread does per request (its SCRIPTING: "Parsing the headers and body is expensive").
-- - fast (CONNS, the `-c` given): no `response()`, so wrk parses nothing; the run ends when every
--   connection has asked for a request after the last (each asks once its answer is in), and
--   `done()` reports wrk's own count of answers and of statuses above 399, which bench/run
--   compares with the checked run's (404s: the LISTs of folders not written yet).
--
-- At the end the script stops wrk itself (wrk runs for `-d` otherwise) and writes a line
-- `requests=<n> ...` to stderr: `bench/run` checks that `requests` equals vault-seed's own count
-- (`-v`) and that no answer was bad.

local ffi = require("ffi")
ffi.cdef [[
  int getpid(void);
  int kill(int pid, int sig);
]]

local queue = {}
total = 0
local sent, answers, not_found, bad = 0, 0, 0, 0
local verified = false
-- Fast mode: the connections, and how many asked for a request after the last.
conns = nil
local parked = 0

local function finish()
  wrk.thread:stop()
  -- wrk's main thread sleeps for `-d`; SIGINT ends that sleep (its handler).
  ffi.C.kill(ffi.C.getpid(), 2)
end

function init(args)
  local file, token = args[1], args[2]
  if not (file and token) then
    error("usage: -- REQUESTS_FILE TOKEN [CONNS]")
  end
  conns = tonumber(args[3])
  local h = { ["X-Vault-Token"] = token, ["X-Vault-Request"] = "true", ["Accept"] = "*/*" }
  local hj = { ["X-Vault-Token"] = token, ["X-Vault-Request"] = "true", ["Accept"] = "*/*",
    ["Content-Type"] = "application/json" }
  for line in io.lines(file) do
    local method, path, body = line:match("^(%S+) (%S+) (.*)$")
    if body == "-" then body = nil end
    -- wrk's parser cannot tell a HEAD answer (no body, no Content-Length from OpenBao) from one
    -- whose body runs to the connection's end: sys/health's GET, a few hundred bytes, instead.
    if method == "HEAD" then method = "GET" end
    queue[#queue + 1] = wrk.format(method, "/v1/" .. path, body and hj or h, body)
  end
  total = #queue
  if conns then
    -- wrk reads this global once init() has run: nil, it parses no answer.
    response = nil
  end
end

function request()
  -- wrk calls this once before the run to check the script's request: give it the first
  -- without counting it.
  if not verified then
    verified = true
    return queue[1]
  end
  sent = sent + 1
  if sent > total then
    if conns then
      parked = parked + 1
      if parked == conns then
        finish()
      end
    end
    -- Nothing left: an empty request parks this connection (wrk writes nothing, waits).
    return ""
  end
  return queue[sent]
end

function response(status, headers, body)
  answers = answers + 1
  if status == 404 then
    not_found = not_found + 1
  elseif status ~= 200 and status ~= 204 then
    bad = bad + 1
  end
  if answers == total then
    io.stderr:write(string.format("requests=%d answers=%d not_found=%d bad=%d\n",
      total, answers, not_found, bad))
    finish()
  end
end

-- setup() and done() share an environment apart from the thread's: the thread is kept to read
-- its globals at the end.
local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
end

function done(summary, latency, requests)
  local t = threads[1]
  if t:get("conns") then
    local e = summary.errors
    io.stderr:write(string.format("requests=%d answers=%d status_over_399=%d socket_errors=%d\n",
      t:get("total"), summary.requests, e.status, e.connect + e.read + e.write + e.timeout))
  end
end
