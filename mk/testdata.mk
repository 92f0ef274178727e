# Test data: PyTorch reference fixtures (testdata/fixtures) and its tests.
#   make testdata         regenerate testdata/fixtures from reference/gen_fixtures.py
#   make testdata-check   fail when the committed fixtures are stale
#   make reference-test   unit tests of the PyTorch reference (reference/*.py)
TESTDATA_PYTHON ?= /usr/bin/python3

.PHONY: testdata testdata-check reference-test

testdata:
	$(TESTDATA_PYTHON) reference/gen_fixtures.py --out testdata/fixtures

testdata-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(TESTDATA_PYTHON) reference/gen_fixtures.py --out "$$tmp/fixtures" >/dev/null && \
	if diff -r testdata/fixtures "$$tmp/fixtures" >/dev/null; then \
		echo "testdata/fixtures is up to date"; \
	else \
		echo "testdata/fixtures is stale: run 'make testdata' and commit"; diff -rq testdata/fixtures "$$tmp/fixtures"; exit 1; \
	fi

reference-test:
	$(TESTDATA_PYTHON) -m unittest discover -s reference -p 'test_*.py'
