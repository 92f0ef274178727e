package onnxpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeIsFresh regenerates the bindings into a temporary
// directory and fails when they differ from the committed onnx.pb.go.
func TestGeneratedCodeIsFresh(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not installed (apt-get install protobuf-compiler): cannot check onnx.pb.go is fresh")
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/onnx/onnx.proto"); err != nil && os.Getenv("ONNX_PROTO_DIR") == "" {
		t.Skip("onnx.proto not installed (apt-get install python3-onnx): cannot check onnx.pb.go is fresh")
	}
	dir := t.TempDir()
	cmd := exec.Command("./generate.sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, out)
	}
	fresh, err := os.ReadFile(filepath.Join(dir, "onnx.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("onnx.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("internal/onnxpb/onnx.pb.go is stale: run `go generate ./internal/onnxpb` and commit the result")
	}
}
