# usher's build and test entry points. `make test` is what CI runs.
GO ?= go
# What usher version prints; an image is tagged with VERSION.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
IMAGE ?= ghcr.io/usherhq/usher:$(VERSION)
STAMP = -X github.com/usherhq/usher/cmd/usher/cli.Version=$(VERSION) -X github.com/usherhq/usher/cmd/usher/cli.Commit=$(COMMIT)

.PHONY: run test unit e2e vet fmt-check bench build image policy-tests latency

## run: usher serve on the embedded default configuration (https://127.0.0.1:8443; webhook callers unchecked, for local use)
run:
	$(GO) run ./cmd/usher serve --webhook-auth none

## build: bin/usher (version and commit stamped) and the kubectl plugin bin/kubectl-usher
build:
	$(GO) build -ldflags "$(STAMP)" -o bin/usher ./cmd/usher
	$(GO) build -o bin/kubectl-usher ./cmd/kubectl-usher

## image: the container image, version and commit stamped (see Dockerfile)
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

## test: everything CI checks: formatting, vet, unit and integration tests
## with the race detector (fuzz seed corpora run as plain tests), then the
## end-to-end suite against a real control plane.
test: fmt-check vet chart-lint unit browser policy-tests e2e

## chart-lint: helm lint --strict of the Helm chart, with its defaults and
## with its monitoring on (PrometheusRule, dashboard), and a render of its
## defaults, with the pinned helm hack/helm.sh builds (cached). It runs before
## unit so that deploy/'s chart tests find that helm, and promtool, which
## hack/promtool.sh installs when missing; the end-to-end suite (TestChart)
## sends the rendered objects to the API server as a dry run.
.PHONY: chart-lint
chart-lint:
	@helm=$$(bash hack/helm.sh) && bash hack/promtool.sh > /dev/null && \
	$$helm lint --strict deploy/chart/usher && \
	$$helm lint --strict deploy/chart/usher --set monitoring.prometheusRule.enabled=true --set monitoring.dashboard.enabled=true && \
	$$helm template usher deploy/chart/usher --namespace usher-system > /dev/null

## browser: usher report's page in a headless Chromium (Debian's chromium
## package; hack/chromium.sh installs it when missing), in its own module
## so that the browser driver is no dependency of usher
.PHONY: browser
browser:
	bash hack/chromium.sh > /dev/null
	cd hack/browser && $(GO) test -count=1 ./...

## policy-tests: the policy tests shipped beside the example configurations
## (docs/policy-tests.md)
policy-tests:
	$(GO) run ./cmd/usher test examples/

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd e2e && $(GO) vet -mod=mod -tags e2e ./...
	cd hack/browser && $(GO) vet ./...

## unit: every Go test with the race detector; allocation counts mean
## nothing under -race (sync.Pool drops items), so the tests that count
## allocations run again without it.
unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'Alloc' ./...

e2e:
	bash hack/e2e.sh

## latency: what usher's webhooks add to pod and Deployment CREATE through a
## real kube-apiserver, at 50 and 200 creates/s (minutes; not part of test)
latency:
	bash hack/latency.sh

## bench: the benchmarks quoted in docs/benchmarks.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
