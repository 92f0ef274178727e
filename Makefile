# attnx: two commands set up everything on a fresh machine.
#   make demo   export, translate and verify the demo models
#   make test   install what the tests need, then run them all
# make build writes bin/attnx; make install puts it on PATH (see install).
GO ?= go
PYTHON := /usr/bin/python3
export ATTNX_ORT_LIB ?= $(CURDIR)/.deps/onnxruntime/lib/libonnxruntime.so.1

.PHONY: all deps build install uninstall test test-kernel-paths vet demo conformance generate

all: build

# deps installs Debian packages and ONNX Runtime when missing (idempotent).
deps:
	@scripts/install-deps.sh

build:
	$(GO) build -buildvcs=auto -o bin/attnx ./cmd/attnx

# install copies bin/attnx to $(PREFIX)/bin and the ONNX Runtime library it
# runs on ($(ATTNX_ORT_LIB), which make deps installs) to $(PREFIX)/lib,
# where attnx finds it by itself (../lib beside its own directory) with any
# PREFIX (make install PREFIX=$$HOME/.local).
# DESTDIR stages the files elsewhere, for packaging.
PREFIX ?= /usr/local
install: build
	@test -f "$(ATTNX_ORT_LIB)" || { echo "make install: no ONNX Runtime library at $(ATTNX_ORT_LIB): run make deps first" >&2; exit 1; }
	install -D -m 0755 bin/attnx "$(DESTDIR)$(PREFIX)/bin/attnx"
	install -D -m 0644 "$(ATTNX_ORT_LIB)" "$(DESTDIR)$(PREFIX)/lib/libonnxruntime.so.1"

uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/attnx" "$(DESTDIR)$(PREFIX)/lib/libonnxruntime.so.1"

vet:
	@test -z "$$(gofmt -l . | grep -v '^internal/onnxpb/')" || { echo "gofmt needed:"; gofmt -l . | grep -v '^internal/onnxpb/'; exit 1; }
	$(GO) vet ./...

# test runs the Go tests (ONNX backend cases, live PyTorch parity, ...), the
# PyTorch reference's own unit tests, and fails when committed fixtures are stale.
test: deps vet
	$(MAKE) --no-print-directory reference-test testdata-check
	$(GO) test -timeout 30m ./...
	$(MAKE) --no-print-directory test-kernel-paths

# test-kernel-paths runs the native evaluator's and its kernels' tests on
# the other paths this CPU offers (ATTNX_KERNELS picks one, as a user can):
# AVX-512 without VNNI (the 8-bit and 4-bit products' fallbacks), AVX-VNNI
# without AVX-512 where the CPU has AVX-VNNI, AVX2 alone, and pure Go
# (-tags purego, the build other GOARCHes get); ./... above took the best.
test-kernel-paths:
	ATTNX_KERNELS=avx512f $(GO) test -count=1 ./onnxeval/... ./internal/kernel ./decode
	if grep -qw avx_vnni /proc/cpuinfo 2>/dev/null; then ATTNX_KERNELS=avx-vnni $(GO) test -count=1 ./onnxeval/... ./internal/kernel ./decode; \
	else echo "test-kernel-paths: no AVX-VNNI on this CPU: the avx-vnni path is not tested here"; fi
	ATTNX_KERNELS=avx2 $(GO) test -count=1 ./onnxeval/... ./internal/kernel ./decode
	$(GO) test -count=1 -tags purego ./onnxeval/... ./internal/kernel ./decode

conformance: deps build
	bin/attnx conformance

# demo exports, runs and verifies the trained demo models (scripts/demo.sh).
demo: deps build
	@scripts/demo.sh

generate:
	$(GO) generate ./internal/onnxpb

-include mk/*.mk
