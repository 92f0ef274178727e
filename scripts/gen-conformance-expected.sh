#!/usr/bin/env bash
# gen-conformance-expected.sh regenerates internal/conformance/expected/failures.tsv,
# the expected-failure list of `attnx conformance`, by running every ONNX
# backend test case through ONNX Runtime's own Node.js binding
# (internal/conformance/expected/gen.mjs), independently of attnx's Go code.
#
# Needs node and npm; the npm packages pinned in package-lock.json
# (onnxruntime-node, protobufjs) are installed into a temporary directory
# without running their install scripts. Extra arguments go to gen.mjs
# (--data DIR, --proto-dir DIR, --rtol, --atol).
set -euo pipefail

cd "$(dirname "$0")/.."
dir=internal/conformance/expected
say() { echo "gen-conformance-expected: $*" >&2; }
for cmd in node npm; do
	command -v "$cmd" >/dev/null || { say "$cmd is required (apt-get install nodejs npm)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$dir/package.json" "$dir/package-lock.json" "$dir/gen.mjs" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --silent)
node "$tmp/gen.mjs" --manual "$dir/manual.tsv" --out "$tmp/failures.tsv" "$@"
mv "$tmp/failures.tsv" "$dir/failures.tsv"
say "wrote $dir/failures.tsv ($(grep -vc '^#' "$dir/failures.tsv") entries)"
