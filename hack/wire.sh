#!/usr/bin/env bash
# Close to the wire (docs/benchmarks.md): /mutate of usher serve against
# a bare Go TLS server answering a fixed body on the same stack
# (usher-load --serve-bare), with the same load generator, in
# interleaved rounds. Usage: hack/wire.sh [ROUNDS] [SECONDS] [CONNS]
set -euo pipefail
rounds=${1:-6} secs=${2:-10} conns=${3:-16}
dir=$(mktemp -d)
go build -o "$dir/usher" ./cmd/usher
go build -o "$dir/usher-load" ./cmd/usher-load
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
start() { # name port args...
  local name=$1 port=$2; shift 2
  "$@" >"$dir/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$dir/$name.pem" ] && break; sleep 0.1; done
}
start bare 18444 "$dir/usher-load" --serve-bare --addr 127.0.0.1:18444 --ca-out "$dir/bare.pem"
start audit 18445 env GOMEMLIMIT= GOGC= "$dir/usher" serve --addr 127.0.0.1:18445 --ca-out "$dir/audit.pem" --audit-log "$dir/audit.jsonl"
start noaudit 18446 env GOMEMLIMIT= GOGC= "$dir/usher" serve --addr 127.0.0.1:18446 --ca-out "$dir/noaudit.pem" --no-audit
sleep 1
for r in $(seq "$rounds"); do
  for t in bare:18444 audit:18445 noaudit:18446; do
    name=${t%%:*} port=${t##*:}
    out=$("$dir/usher-load" --addr "127.0.0.1:$port" --ca "$dir/$name.pem" --conns "$conns" --duration "${secs}s" | tr '\n' ' ')
    echo "round $r $name load $(cut -d' ' -f1-3 /proc/loadavg): $out"
  done
done
