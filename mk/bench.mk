# Benchmark: greedy decoding speed (PyTorch eager, torch.onnx graphs, attnx
# step loop and in-graph loop, floor). A benchmark, not a timed test.
#   make bench                       the default configuration (see `attnx help bench`)
#   make bench BENCH_FLAGS='-batch 1 -threads 1 -src-len 12'
#   make bench BENCH_JSON=f.json     where the JSON report goes (default bin/bench.json)
BENCH_FLAGS ?=
BENCH_JSON ?= bin/bench.json

.PHONY: bench

bench: deps build
	bin/attnx bench -python $(PYTHON) -cpuprofile bin/bench-cpu.pprof -json-out $(BENCH_JSON) $(BENCH_FLAGS)
