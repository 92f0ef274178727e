# Test data: PyTorch reference fixtures (testdata/fixtures) and its tests.
#   make testdata         regenerate testdata/fixtures from testdata/reference/gen_fixtures.py
#   make testdata-check   fail when the committed fixtures are stale: files and
#                         the manifest exactly, PyTorch's float outputs within
#                         the spec's tolerance (they vary with the BLAS library)
#   make reference-test   unit tests of the PyTorch reference (testdata/reference)
TESTDATA_PYTHON ?= /usr/bin/python3

.PHONY: testdata testdata-check reference-test

testdata:
	$(TESTDATA_PYTHON) testdata/reference/gen_fixtures.py --out testdata/fixtures

testdata-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(TESTDATA_PYTHON) testdata/reference/gen_fixtures.py --out "$$tmp/fixtures" >/dev/null && \
	$(GO) build -o "$$tmp/fixturediff" ./internal/fixturediff && \
	"$$tmp/fixturediff" testdata/fixtures "$$tmp/fixtures"

reference-test:
	$(TESTDATA_PYTHON) -m unittest discover -s testdata/reference -p 'test_*.py'
