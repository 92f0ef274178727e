#!/usr/bin/env bash
# generate.sh regenerates onnx.pb.go and onnx-data.pb.go from Debian's
# onnx.proto and onnx-data.proto into $1 (default: this directory).
# protoc-gen-go is built at the version in go.mod.
#
# onnx-data.proto (SequenceProto, MapProto, OptionalProto: how the ONNX
# backend test data stores non-tensor values) imports "onnx/onnx-ml.proto";
# it only uses TensorProto and SparseTensorProto from it, which onnx.proto
# defines the same way, so a copy importing "onnx.proto" is generated into
# the same Go package.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
proto_dir=${ONNX_PROTO_DIR:-/usr/lib/python3/dist-packages/onnx}
for f in onnx.proto onnx-data.proto; do
	[ -f "$proto_dir/$f" ] || { echo "generate.sh: $proto_dir/$f not found (apt-get install python3-onnx)" >&2; exit 1; }
done
command -v protoc >/dev/null || { echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin" "$tmp/proto"
cp "$proto_dir/onnx.proto" "$tmp/proto/"
sed 's#^import "onnx/onnx-ml.proto";$#import "onnx.proto";#' "$proto_dir/onnx-data.proto" >"$tmp/proto/onnx-data.proto"
grep -q '^import "onnx.proto";$' "$tmp/proto/onnx-data.proto" ||
	{ echo "generate.sh: $proto_dir/onnx-data.proto does not import onnx/onnx-ml.proto as expected" >&2; exit 1; }
(cd "$here" && go build -o "$tmp/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)
PATH="$tmp/bin:$PATH" protoc -I "$tmp/proto" --go_out="$out" --go_opt=paths=source_relative \
	--go_opt=Monnx.proto=github.com/attnx/attnx/internal/onnxpb \
	--go_opt=Monnx-data.proto=github.com/attnx/attnx/internal/onnxpb \
	onnx.proto onnx-data.proto
