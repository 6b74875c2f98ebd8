-- wrk script of scripts/bench/wallet-transfer.sh: POST /api/v1/wallet/transfer-to-ai
-- of 1.00 with a fresh idempotency key per request, spread over the users
-- whose tokens TOKENS lists (comma-separated), so the run moves money for
-- several accounts at once as a real platform would.
local id = 0
function setup(thread)
  id = id + 1
  thread:set("tid", id)
end
function init(args)
  n = 0
  tokens = {}
  for t in string.gmatch(os.getenv("TOKENS"), "[^,]+") do table.insert(tokens, t) end
  run = os.getenv("RUN") or "r"
end
function request()
  n = n + 1
  local body = string.format('{"amount":"1.00","idempotency_key":"%s-%d-%d"}', run, tid, n)
  return wrk.format("POST", "/api/v1/wallet/transfer-to-ai",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. tokens[(n + tid) % #tokens + 1]}, body)
end
