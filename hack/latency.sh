#!/usr/bin/env bash
# latency.sh — measure the latency usher's webhooks add to pod and Deployment
# CREATE through a real kube-apiserver (e2e TestUsherLatency), on a fresh
# local control plane (hack/e2e.sh), and print the table.
#
# Usage: hack/latency.sh [go test flags...]
#
# Settings (environment), all optional:
#   USHER_E2E_LATENCY_RATES     creates per second, comma separated (50,200)
#   USHER_E2E_LATENCY_KINDS     pod,deployment
#   USHER_E2E_LATENCY_WARMUP    per phase, not counted (5s)
#   USHER_E2E_LATENCY_DURATION  per phase, measured (20s)
#   USHER_E2E_LATENCY_ROUNDS    rounds, alternating which side goes first (1)
#   USHER_E2E_LATENCY_MODES     webhook,floor,both (webhook): what admits the
#                               measured namespace, each against neither
#   USHER_E2E_LATENCY_GROUPS    merge: the partition's groups merged with a
#                               slapd's on loopback (default: given)
#   USHER_E2E_LATENCY_OUT       also keep the table in this file
# and those of hack/e2e.sh and hack/e2e-cluster.sh; for example
#   USHER_E2E_APISERVER_ARGS='--max-requests-inflight 1600 --max-mutating-requests-inflight 800'
# gives the API server more seats to share out (API Priority and Fairness
# gives alice's flow schema, global-default, 49 seats of the default 600).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${USHER_E2E_LATENCY_OUT:-}
tmp=
if [ -z "$out" ]; then
	tmp=$(mktemp "${TMPDIR:-/tmp}/usher-latency.XXXXXX")
	out=$tmp
fi
trap '[ -z "$tmp" ] || rm -f "$tmp"' EXIT

echo "latency: $(nproc) CPUs; $(uptime)" >&2
export USHER_E2E_LATENCY=1 USHER_E2E_LATENCY_OUT="$out"
rc=0
bash "$ROOT/hack/e2e.sh" -run '^TestUsherLatency$' -timeout 90m "$@" || rc=$?
echo "latency: after: $(uptime)" >&2
if [ -s "$out" ]; then
	echo
	cat "$out"
fi
exit $rc
