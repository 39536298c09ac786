#!/usr/bin/env bash
# benchstat.sh runs benchstat at a pinned version, installing it once into
# ~/.cache/usher-tools/bin (through the Go module proxy, nothing else).
#
#   bash hack/benchstat.sh before.txt after.txt
set -euo pipefail
version=v0.0.0-20260908200009-22c9c6c9d4da # golang.org/x/perf
bin="${HOME}/.cache/usher-tools/bin"
exe="${bin}/benchstat-${version}"
if [[ ! -x "${exe}" ]]; then
	mkdir -p "${bin}"
	GOBIN="${bin}" go install "golang.org/x/perf/cmd/benchstat@${version}"
	mv "${bin}/benchstat" "${exe}"
fi
exec "${exe}" "$@"
