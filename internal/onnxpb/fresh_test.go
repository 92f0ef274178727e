package onnxpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
)

// generated lists the files generate.sh writes.
var generated = []string{"onnx.pb.go", "onnx-data.pb.go"}

// TestGeneratedCodeIsFresh regenerates the bindings into a temporary
// directory and fails when they differ from the committed ones.
func TestGeneratedCodeIsFresh(t *testing.T) {
	testenv.Command(t, "protoc", "protobuf-compiler")
	protoDir := os.Getenv("ONNX_PROTO_DIR")
	if protoDir == "" {
		protoDir = "/usr/lib/python3/dist-packages/onnx"
	}
	for _, f := range []string{"onnx.proto", "onnx-data.proto"} {
		if _, err := os.Stat(filepath.Join(protoDir, f)); err != nil {
			testenv.Missing(t, f, "apt-get install python3-onnx (or make deps), or set ONNX_PROTO_DIR", err)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("./generate.sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, out)
	}
	for _, f := range generated {
		fresh, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("internal/onnxpb/%s is stale: run `go generate ./internal/onnxpb` and commit the result", f)
		}
	}
}
