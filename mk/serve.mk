# Continuous batching: the concurrency tests under the race detector, ten
# times each (scheduler, the 1,000-request identical-results test through
# the server, cancellation, queue full, deadlines, SIGTERM during load),
# and the load table of the demo model.
#   make serve-race
#   make loadtest                    clients 1, 8, 32, 64; batching on, off
#                                    (each request alone, serve's default
#                                    engine and threads), off-1t (the same
#                                    with one ORT thread, as on has) and
#                                    off-steps; three rounds, medians and
#                                    speedups (about 5 minutes)
#   make loadtest LOADTEST_FLAGS='--clients 32 --duration 10s --repeat 5'
LOADTEST_FLAGS ?= --batching on,off,off-1t,off-steps --repeat 3

.PHONY: serve-race loadtest

serve-race: deps
	$(GO) test -race -count=10 -timeout 30m \
		-run 'Scheduler|Batching|ResultsMatch|QueueFull|RequestTimeout|ServeShutdown|SIGTERM' \
		./decode ./translate ./serve ./cmd/attnx

loadtest: deps build
	@test -f out/demo/luong/decoder.onnx || $(MAKE) --no-print-directory demo
	bin/attnx loadtest --model out/demo/luong --inputs testdata/demo/heldout.txt $(LOADTEST_FLAGS)
