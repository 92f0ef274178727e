#!/usr/bin/env bash
# generate.sh regenerates onnx.pb.go from Debian's onnx.proto into $1
# (default: this directory). protoc-gen-go is built at the version in go.mod.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
proto_dir=${ONNX_PROTO_DIR:-/usr/lib/python3/dist-packages/onnx}
[ -f "$proto_dir/onnx.proto" ] || { echo "generate.sh: $proto_dir/onnx.proto not found (apt-get install python3-onnx)" >&2; exit 1; }
command -v protoc >/dev/null || { echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)
PATH="$bin:$PATH" protoc -I "$proto_dir" --go_out="$out" --go_opt=paths=source_relative \
	--go_opt=Monnx.proto=github.com/attnx/attnx/internal/onnxpb onnx.proto
