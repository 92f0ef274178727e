// Package onnxpb holds the protobuf bindings for onnx.proto and
// onnx-data.proto (SequenceProto and its kin, the files of the ONNX backend
// test data), generated from the copies that Debian's python3-onnx installs
// (ONNX 1.12, IR version 8, opsets up to 17). Regenerate with `go generate
// ./internal/onnxpb` (needs protoc from Debian's protobuf-compiler);
// TestGeneratedCodeIsFresh fails when the committed copies are stale.
//
// Only package onnxfile touches these types (TestProtobufStaysInOnnxfile in
// package onnxfile enforces it); everything else works on the builder's own
// types and on what export returns.
package onnxpb

//go:generate ./generate.sh
