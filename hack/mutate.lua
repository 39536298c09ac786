-- wrk script for docs/benchmarks.md: POSTs the pod CREATE review of
-- cmd/usher-load, read from the file named by USHER_REVIEW (written with
-- `go run ./cmd/usher-load --print-review > /tmp/review.json`).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("USHER_REVIEW") or "/tmp/review.json", "r")
wrk.body = f:read("*a")
f:close()
