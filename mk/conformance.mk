# Conformance: the expected-failure list of `attnx conformance`.
#   make conformance-expected   regenerate internal/conformance/expected/failures.tsv by
#                               running every ONNX backend case through ONNX
#                               Runtime's Node.js binding (needs node and npm)
.PHONY: conformance-expected

conformance-expected:
	scripts/gen-conformance-expected.sh
