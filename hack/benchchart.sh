#!/usr/bin/env bash
# benchchart.sh runs the engine's scaling benchmarks and draws
# docs/benchmarks-scaling.svg from their output (hack/benchchart, standard
# library only). COUNT runs of each (default 6); BEFORE_DECIDE and
# BEFORE_LOAD, when set, name the same benchmarks' output from another
# revision, drawn dashed.
#
#   bash hack/benchchart.sh
#   COUNT=3 OUT=/tmp/chart.svg bash hack/benchchart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
count="${COUNT:-6}"
out="${OUT:-docs/benchmarks-scaling.svg}"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
go test -c -o "${tmp}/engine.test" ./engine/
for _ in $(seq "${count}"); do
	"${tmp}/engine.test" -test.run '^$' -test.bench 'DecideCached' -test.benchmem -test.benchtime 0.2s >>"${tmp}/decide.txt"
	"${tmp}/engine.test" -test.run '^$' -test.bench 'LoadScale' -test.benchmem -test.benchtime 1x >>"${tmp}/load.txt"
	"${tmp}/engine.test" -test.run '^$' -test.bench 'CompileScale' -test.benchmem -test.benchtime 3x >>"${tmp}/compile.txt"
done
go run ./hack/benchchart -decide "${tmp}/decide.txt" -load "${tmp}/load.txt" -compile "${tmp}/compile.txt" \
	${BEFORE_DECIDE:+-decide-before "${BEFORE_DECIDE}"} ${BEFORE_LOAD:+-load-before "${BEFORE_LOAD}"} -o "${out}"
echo "wrote ${out}"
