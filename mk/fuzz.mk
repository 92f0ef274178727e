# Fuzzing: every Go fuzz target in the repository, one after another.
#   make fuzz                       each target for FUZZTIME (default 1m)
#   make fuzz FUZZTIME=10m          longer
#   make fuzz FUZZTIME=100000x      a fixed number of executions per target
#   make fuzz FUZZ_PARALLEL=2       more workers (default 1: the machine is shared)
#   make fuzz-list                  print the targets, one "package target" per line
# Targets are found with `go test -list`, so a new FuzzXxx is picked up
# without editing this file. A crash stops the run; the input is saved under
# the package's testdata/fuzz/FuzzXxx/ and replays as a regular test.
FUZZTIME ?= 1m
FUZZ_PARALLEL ?= 1

.PHONY: fuzz fuzz-list

fuzz-list:
	@for pkg in $$($(GO) list ./...); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do echo "$$pkg $$t"; done; \
	done

fuzz:
	@$(MAKE) --no-print-directory fuzz-list > .fuzz-targets.tmp || { rm -f .fuzz-targets.tmp; exit 1; }; \
	n=$$(wc -l < .fuzz-targets.tmp); i=0; \
	echo "fuzz: $$n targets, FUZZTIME=$(FUZZTIME) each"; \
	while read pkg t; do \
		i=$$((i+1)); echo "== [$$i/$$n] $$pkg $$t"; \
		$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -parallel=$(FUZZ_PARALLEL) $$pkg || { rm -f .fuzz-targets.tmp; exit 1; }; \
	done < .fuzz-targets.tmp; \
	rm -f .fuzz-targets.tmp
