#!/usr/bin/env bash
# helm.sh — print the path of a helm binary of the pinned version, building
# it from the Go module proxy with `go install` the first time (about two
# minutes on two cores) and reusing it afterwards.
#
# Usage: hack/helm.sh            prints e.g. ~/.cache/usher-e2e/helm-v3.19.0/helm
#        "$(hack/helm.sh)" lint deploy/chart/usher --strict
#
# Settings (environment):
#   USHER_HELM_VERSION  helm release to build (default below); the module is
#                       helm.sh/helm/v3, checked against go.sum's checksum
#                       database like any other module
#   USHER_E2E_CACHE     cache directory, shared with hack/e2e-cluster.sh
#                       (default ${XDG_CACHE_HOME:-$HOME/.cache}/usher-e2e)
#
# Idempotent and safe to run concurrently (a lock serialises the build; the
# binary appears under its final name only once complete). Needs no
# terminal and works as root: nothing here prompts or calls sudo. Only the
# path goes to stdout; progress goes to stderr.
set -euo pipefail

VERSION=${USHER_HELM_VERSION:-v3.19.0}
# Bump when the way helm is built changes, to force a rebuild.
BUILD_REV=2
CACHE=${USHER_E2E_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/usher-e2e}
DIR="$CACHE/helm-$VERSION"
HELM="$DIR/helm"

log() { printf '[helm.sh] %s\n' "$*" >&2; }

installed() {
	[ -x "$HELM" ] && [ "$(cat "$DIR/stamp" 2>/dev/null)" = "$VERSION rev $BUILD_REV" ] &&
		"$HELM" version --template '{{.Version}}' 2>/dev/null | grep -qx "$VERSION"
}

if installed; then
	echo "$HELM"
	exit 0
fi

command -v go >/dev/null || { log "error: go is not on PATH"; exit 1; }
mkdir -p "$DIR"
exec 9>"$DIR.lock"
if command -v flock >/dev/null; then
	flock 9
fi
if installed; then # another run built it while we waited
	echo "$HELM"
	exit 0
fi

tmp=$(mktemp -d "$DIR.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "building helm $VERSION with go install (once; cached in $DIR)"
# Stamped the way helm's own Makefile does: the version, so that `helm
# version` names it, and the Kubernetes version of helm's client-go (1.34
# for client-go v0.34), which `helm template` and `helm lint` assume as the
# cluster's (unstamped, helm assumes 1.20 and refuses the chart's
# kubeVersion). Built outside any module, so the repository's go.mod neither
# constrains nor records helm's dependencies.
(
	cd "$tmp"
	export GOFLAGS=-mod=mod GO111MODULE=on CGO_ENABLED=0
	gomod=$(go mod download -json "helm.sh/helm/v3@$VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	kube=$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod")
	[ -n "$kube" ] || { log "error: no k8s.io/client-go in $gomod"; exit 1; }
	x="-X helm.sh/helm/v3/internal/version.version=$VERSION"
	for pkg in pkg/chartutil pkg/lint/rules; do
		x="$x -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$kube"
	done
	GOBIN="$tmp" go install -ldflags "$x" "helm.sh/helm/v3/cmd/helm@$VERSION" >&2
)
mv -f "$tmp/helm" "$HELM"
echo "$VERSION rev $BUILD_REV" > "$DIR/stamp"
installed || { log "error: $HELM does not report version $VERSION"; exit 1; }
echo "$HELM"
