# Operator benchmark: the candidate graphs of a reduced-precision decoder
# step (classifier product, LSTM and GRU cells; float32 and quantized forms)
# on ONNX Runtime, timed and compared with float32. A benchmark, not a test.
#   make opbench                                   all groups, batch 1 and 32
#   make opbench OPBENCH_FLAGS='--only LSTM --batch 1 --rounds 31'
OPBENCH_FLAGS ?=

.PHONY: opbench

opbench: deps
	$(GO) run ./internal/opbench/cmd/opbench $(OPBENCH_FLAGS)
