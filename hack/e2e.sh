#!/usr/bin/env bash
# e2e.sh — run usher's end-to-end tests (the e2e/ module, build tag e2e)
# against a fresh local control plane, and tear it down on exit whatever
# happens.
#
# Usage: hack/e2e.sh [go test flags...]      e.g. hack/e2e.sh -run TestSmoke
#
# Settings (environment), besides those of hack/e2e-cluster.sh:
#   USHER_E2E_STATE  state dir of this run (default: a new dir under $TMPDIR);
#                    removed after a passing run, kept with its logs otherwise
#   USHER_E2E_KEEP   set to 1 to keep the state dir after a passing run too
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER="$ROOT/hack/e2e-cluster.sh"
export USHER_E2E_STATE=${USHER_E2E_STATE:-$(mktemp -d "${TMPDIR:-/tmp}/usher-e2e.XXXXXX")}

rc=1
gotest=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ -n "$gotest" ]; then
		# go test and the test binary run in a process group of their own.
		kill -TERM -- "-$gotest" 2>/dev/null || true
		wait "$gotest" 2>/dev/null || true
	fi
	bash "$CLUSTER" down || true
	if [ "$rc" = 0 ] && [ "${USHER_E2E_KEEP:-}" != 1 ]; then
		rm -rf "$USHER_E2E_STATE" "$USHER_E2E_STATE.lock"
	else
		echo "e2e: state and logs kept in $USHER_E2E_STATE (logs/)" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The watchdog takes the cluster down even if this script is killed with
# SIGKILL and its trap never runs.
USHER_E2E_OWNER_PID=$$ bash "$CLUSTER" up
export USHER_E2E_ENV="$USHER_E2E_STATE/env"

cd "$ROOT/e2e"
# -mod=mod: the e2e module follows the main module through a replace, so a
# dependency the lead adds there may need a go.sum line here first.
# -parallel 16: the scenarios wait mostly on controllers, not on the CPU, so
# they run side by side (each with its own usher and namespaces) even on two
# cores; go test's default would be GOMAXPROCS. A -parallel in "$@" wins.
# go test runs in the background so that a signal reaches the traps at once
# (bash runs traps only between commands), in a session of its own so that
# cleanup can stop it and its test binary together.
setsid go test -mod=mod -tags e2e -count=1 -timeout 30m -parallel 16 -v "$@" ./... &
gotest=$!
set +e
wait "$gotest"
rc=$?
set -e
gotest=
exit $rc
