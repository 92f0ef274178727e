# Benchmark: greedy decoding speed (PyTorch eager, torch.onnx graphs, attnx
# step loop and in-graph loop at each weights precision, floor). A benchmark,
# not a timed test.
#   make bench                       the default configuration (see `attnx help bench`)
#   make bench BENCH_FLAGS='-batch 1 -threads 1 -src-len 12 -weights fp32,int8,int4'
#   make bench BENCH_JSON=f.json     where the JSON report goes (default bin/bench.json)
# PyTorch's figures are only honest on an optimised BLAS: bench-blas installs
# libopenblas0-pthread when it is missing (Debian then points the libblas.so.3
# alternative at it); the report names the BLAS PyTorch loaded and warns when
# it was the reference one.
BENCH_FLAGS ?=
BENCH_JSON ?= bin/bench.json

.PHONY: bench bench-blas

bench: deps build bench-blas
	bin/attnx bench -python $(PYTHON) -cpuprofile bin/bench-cpu.pprof -json-out $(BENCH_JSON) $(BENCH_FLAGS)

# File translation (attnx translate --src) against a PyTorch decoder batched
# as OpenNMT-py's translator batches: `attnx help bench`, --corpus.
.PHONY: bench-corpus
bench-corpus: deps build bench-blas
	OMP_WAIT_POLICY=PASSIVE bin/attnx bench --corpus 500 -python $(PYTHON) -json-out bin/bench-corpus.json $(BENCH_FLAGS)

bench-blas:
	@if ! dpkg-query -W -f='$${Status}' libopenblas0-pthread 2>/dev/null | grep -q "install ok installed"; then \
		SUDO=; if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
		echo "bench: installing libopenblas0-pthread, so that PyTorch computes with OpenBLAS, not the reference BLAS" >&2; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends libopenblas0-pthread >/dev/null; \
	fi

# The accuracy of the reduced-precision exports on the demo models
# (scripts/quant-accuracy.sh): held-out exact match, agreement with float32
# PyTorch on 1,000 random sentences, largest log-prob deviation.
.PHONY: quant-accuracy

quant-accuracy: deps build
	@scripts/quant-accuracy.sh
