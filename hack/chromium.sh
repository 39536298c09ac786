#!/usr/bin/env bash
# chromium.sh — print the path of a headless-capable Chromium, which tests
# usher report's page (hack/browser), installing Debian's chromium package
# when it is missing.
#
# Usage: hack/chromium.sh            prints e.g. /usr/bin/chromium
#
# Settings (environment):
#   USHER_CHROMIUM  a Chromium to use instead (printed as it is)
#
# Installing needs root (or sudo without a password); nothing here
# prompts. Only the path goes to stdout.
set -euo pipefail

log() { printf '[chromium.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

find_chromium() {
	CHROMIUM=${USHER_CHROMIUM:-$(command -v chromium || true)}
}

# shellcheck source=root.sh
source "$(dirname "${BASH_SOURCE[0]}")/root.sh"

find_chromium
if [ -z "$CHROMIUM" ]; then
	command -v apt-get >/dev/null || die "no chromium and no apt-get to install Debian's chromium package"
	log "installing chromium"
	apt_install chromium >/dev/null || die "apt-get install chromium failed"
	find_chromium
	[ -n "$CHROMIUM" ] || die "chromium is still not on PATH after installing it"
fi
echo "$CHROMIUM"
