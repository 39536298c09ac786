# usher's build and test entry points. `make test` is what CI runs.
GO ?= go

.PHONY: run test unit e2e vet fmt-check bench build policy-tests

## run: usher serve on the embedded default configuration (https://127.0.0.1:8443)
run:
	$(GO) run ./cmd/usher serve

build:
	$(GO) build -o bin/usher ./cmd/usher

## test: everything CI checks: formatting, vet, unit and integration tests
## with the race detector (fuzz seed corpora run as plain tests), then the
## end-to-end suite against a real control plane.
test: fmt-check vet unit policy-tests e2e

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

## unit: every Go test with the race detector; allocation counts mean
## nothing under -race (sync.Pool drops items), so the tests that count
## allocations run again without it.
unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'Alloc' ./...

e2e:
	bash hack/e2e.sh

## bench: the benchmarks quoted in docs/benchmarks.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
