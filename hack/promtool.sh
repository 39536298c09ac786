#!/usr/bin/env bash
# promtool.sh — print the path of promtool, which checks and unit-tests the
# chart's Prometheus rules (deploy/chart_test.go), installing Debian's
# prometheus package, which ships it, when it is missing.
#
# Usage: hack/promtool.sh            prints e.g. /usr/bin/promtool
#        "$(hack/promtool.sh)" check rules FILE
#
# Settings (environment):
#   USHER_PROMTOOL  a promtool to use instead (printed as it is)
#
# Installing needs root (or sudo without a password); nothing here
# prompts. The package would start a system-wide Prometheus where an init
# system runs: service starts are forbidden while installing, as
# hack/e2e-cluster.sh does for etcd. Only the path goes to stdout.
set -euo pipefail

log() { printf '[promtool.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

find_promtool() {
	PROMTOOL=${USHER_PROMTOOL:-$(command -v promtool || true)}
	[ -n "$PROMTOOL" ] || { [ -x /usr/bin/promtool ] && PROMTOOL=/usr/bin/promtool; } || true
}

# shellcheck source=root.sh
source "$(dirname "${BASH_SOURCE[0]}")/root.sh"

find_promtool
if [ -z "$PROMTOOL" ]; then
	command -v apt-get >/dev/null || die "no promtool and no apt-get to install Debian's prometheus package, which has it"
	log "installing prometheus (for promtool)"
	policy=/usr/sbin/policy-rc.d made_policy=
	if [ ! -e "$policy" ]; then
		as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
		made_policy=1
	fi
	rc=0
	apt_install prometheus >/dev/null || rc=$?
	[ -z "$made_policy" ] || as_root rm -f "$policy"
	[ $rc = 0 ] || die "apt-get install prometheus failed"
	find_promtool
	[ -n "$PROMTOOL" ] || die "promtool is still not on PATH after installing prometheus"
fi
echo "$PROMTOOL"
