#!/usr/bin/env bash
# Close to the wire (docs/benchmarks.md): /mutate of usher serve against
# a bare Go TLS server answering a fixed body on the same stack
# (usher-load --serve-bare), with the same load generator, in
# interleaved rounds. Usage: hack/wire.sh [ROUNDS] [SECONDS] [CONNS]
#
# WIRE_BEFORE=PATH adds two servers run from another usher binary (an
# older build), with and without audit records, to every round, so that a
# change is measured interleaved with what it changes.
# WIRE_HTTP2=1 sends the reviews over HTTP/2, as kube-apiserver calls
# webhooks (each request then runs on a new goroutine in both servers).
# WIRE_PROFILE=DIR builds usher and usher-load with -tags pprof and saves
# a CPU profile of each server (DIR/bare.pprof, DIR/audit.pprof,
# DIR/noaudit.pprof) taken during its first round; read one with
# go tool pprof DIR/usher DIR/audit.pprof (DIR/usher-load for bare).
# Each line ends with the CPU time the server process spent per review
# in that round (user + system, from /proc/PID/stat): unlike the
# throughput, that figure hardly depends on what else the cores run.
set -euo pipefail
rounds=${1:-6} secs=${2:-10} conns=${3:-16}
dir=$(mktemp -d)
prof=${WIRE_PROFILE:-}
tags=()
if [ -n "$prof" ]; then mkdir -p "$prof"; tags=(-tags pprof); fi
go build "${tags[@]}" -o "$dir/usher" ./cmd/usher
go build "${tags[@]}" -o "$dir/usher-load" ./cmd/usher-load
[ -n "$prof" ] && cp "$dir/usher" "$dir/usher-load" "$prof/"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
  rm -rf "$dir" # the audit logs grow by about 100 MB a minute
}
trap cleanup EXIT
declare -A pidof
start() { # name args...
  local name=$1; shift
  "$@" >"$dir/$name.log" 2>&1 &
  pids+=($!)
  pidof[$name]=$!
  for _ in $(seq 100); do [ -s "$dir/$name.pem" ] && break; sleep 0.1; done
}
serve() { # name port pprof-port usher-binary flags...
  local name=$1 port=$2 pport=$3 bin=$4; shift 4
  start "$name" env GOMEMLIMIT= GOGC= USHER_PPROF_ADDR="${prof:+127.0.0.1:$pport}" \
    "$bin" serve --addr "127.0.0.1:$port" --ca-out "$dir/$name.pem" "$@"
}
start bare env USHER_PPROF_ADDR="${prof:+127.0.0.1:18454}" "$dir/usher-load" --serve-bare --addr 127.0.0.1:18444 --ca-out "$dir/bare.pem"
serve audit 18445 18455 "$dir/usher" --webhook-auth none --audit-log "$dir/audit.jsonl"
serve noaudit 18446 18456 "$dir/usher" --webhook-auth none --no-audit
servers=(bare:18444 audit:18445 noaudit:18446)
if [ -n "${WIRE_BEFORE:-}" ]; then
  serve audit-before 18447 0 "$WIRE_BEFORE" --webhook-auth none --audit-log "$dir/audit-before.jsonl"
  serve noaudit-before 18448 0 "$WIRE_BEFORE" --webhook-auth none --no-audit
  servers+=(audit-before:18447 noaudit-before:18448)
fi
cputicks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # utime + stime
sleep 1
for r in $(seq "$rounds"); do
  for t in "${servers[@]}"; do
    name=${t%%:*} port=${t##*:}
    ppid=
    if [ -n "$prof" ] && [ "$r" = 1 ] && { [ "$name" = bare ] || [ "$name" = audit ] || [ "$name" = noaudit ]; }; then
      pport=$((port + 10))
      curl -sf -o "$prof/$name.pprof" "http://127.0.0.1:$pport/debug/pprof/profile?seconds=$((secs > 2 ? secs - 1 : 1))" &
      ppid=$!
    fi
    cpu0=$(cputicks "${pidof[$name]}")
    out=$("$dir/usher-load" --addr "127.0.0.1:$port" --ca "$dir/$name.pem" --conns "$conns" --duration "${secs}s" ${WIRE_HTTP2:+--http2} | tr '\n' ' ')
    cpu1=$(cputicks "${pidof[$name]}")
    n=$(sed -n 's/.*requests \([0-9]*\) ok.*/\1/p' <<<"$out")
    per=$(awk -v t=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.1f", t / hz * 1e6 / n; else print "?" }')
    echo "round $r $name load $(cut -d' ' -f1-3 /proc/loadavg): $out server CPU ${per} µs/review"
    if [ -n "$ppid" ]; then wait "$ppid"; fi
  done
done
