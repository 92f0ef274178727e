# attnx: two commands set up everything on a fresh machine.
#   make demo   export, translate and verify the demo models
#   make test   install what the tests need, then run them all
GO ?= go
PYTHON := /usr/bin/python3
export ATTNX_ORT_LIB ?= $(CURDIR)/.deps/onnxruntime/lib/libonnxruntime.so.1

.PHONY: all deps build test vet demo conformance generate

all: build

# deps installs Debian packages and ONNX Runtime when missing (idempotent).
deps:
	@scripts/install-deps.sh

build:
	$(GO) build -o bin/attnx ./cmd/attnx

vet:
	@test -z "$$(gofmt -l . | grep -v '^internal/onnxpb/')" || { echo "gofmt needed:"; gofmt -l . | grep -v '^internal/onnxpb/'; exit 1; }
	$(GO) vet ./...

# test runs the Go tests (ONNX backend cases, live PyTorch parity, ...), the
# PyTorch reference's own unit tests, and fails when committed fixtures are stale.
test: deps vet
	$(MAKE) --no-print-directory reference-test testdata-check
	$(GO) test -timeout 30m ./...

conformance: deps build
	bin/attnx conformance

# demo exports, runs and verifies the trained demo models (scripts/demo.sh).
demo: deps build
	@scripts/demo.sh

generate:
	$(GO) generate ./internal/onnxpb

-include mk/*.mk
