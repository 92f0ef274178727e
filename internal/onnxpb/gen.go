// Package onnxpb holds the protobuf bindings for onnx.proto, generated from
// the copy that Debian's python3-onnx installs (ONNX 1.12, IR version 8,
// opsets up to 17). Regenerate with `go generate ./internal/onnxpb` (needs
// protoc from Debian's protobuf-compiler); TestGeneratedCodeIsFresh fails
// when the committed copy is stale.
//
// Only package export touches these types; everything else works on the
// builder's own types.
package onnxpb

//go:generate ./generate.sh
