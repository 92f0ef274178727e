package onnxcheck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxfile"
)

func relu(x *builder.Value, outType builder.Type) *builder.Value {
	return builder.Apply(builder.Call{Op: "Relu", Inputs: []*builder.Value{x}, Infer: func() ([]*builder.Type, error) {
		return []*builder.Type{&outType}, nil
	}}, 1)[0]
}

func model(t *testing.T, outType builder.Type) []byte {
	g := builder.New("g")
	x := g.Input("x", builder.Float, builder.Dims("batch", 3))
	g.Output("y", relu(x, outType))
	b, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckerAcceptsAndRejects(t *testing.T) {
	Require(t)
	good := model(t, builder.TensorType(builder.Float, builder.Dims("batch", 3)))
	Check(t, good)
	if err := CheckBytes(good); err != nil {
		t.Errorf("valid model rejected: %v", err)
	}
	// Relu of float32 declared as int64: strict shape inference objects.
	bad := model(t, builder.TensorType(builder.Int64, builder.Dims("batch", 3)))
	err := CheckBytes(bad)
	if err == nil {
		t.Fatal("a model with a wrongly typed output passed the checker")
	}
	if errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "onnx checker:") || !strings.Contains(err.Error(), "InferenceError") {
		t.Errorf("error %q should carry the checker's message", err)
	}
	t.Logf("bad model: %v", err)
	// A file that is not a model at all.
	p := filepath.Join(t.TempDir(), "junk.onnx")
	os.WriteFile(p, []byte("junk"), 0o644)
	if err := CheckFile(p); err == nil || !strings.Contains(err.Error(), "junk.onnx") {
		t.Errorf("junk: %v", err)
	}
	if err := CheckFile(filepath.Join(t.TempDir(), "missing.onnx")); err == nil {
		t.Error("a missing file passed")
	}
}

func TestCheckerRejectsUnknownOperator(t *testing.T) {
	Require(t)
	g := builder.New("g")
	x := g.Input("x", builder.Float, builder.Dims(2))
	y := builder.Apply(builder.Call{Op: "NoSuchOp", Inputs: []*builder.Value{x}, Infer: func() ([]*builder.Type, error) {
		tt := x.Type()
		return []*builder.Type{&tt}, nil
	}}, 1)[0]
	g.Output("y", y)
	b, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckBytes(b); err == nil || !strings.Contains(err.Error(), "NoSuchOp") {
		t.Errorf("unknown operator: %v", err)
	}
}

func TestCheckFiles(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.onnx", model(t, builder.TensorType(builder.Float, builder.Dims("batch", 3))))
	bad := write("bad.onnx", model(t, builder.TensorType(builder.Int64, builder.Dims("batch", 3))))
	junk := write("junk.onnx", []byte("junk"))
	if err := CheckFiles(good, good); err != nil {
		t.Errorf("valid models rejected: %v", err)
	}
	err := CheckFiles(good, bad, good, junk)
	if err == nil {
		t.Fatal("a wrongly typed model and junk passed")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "2 of 4 models fail") || !strings.Contains(msg, bad+": onnx checker: InferenceError") ||
		!strings.Contains(msg, junk+": onnx checker:") || strings.Contains(msg, good+":") {
		t.Errorf("error %q should name bad.onnx and junk.onnx with the checker's messages, and not good.onnx", msg)
	}
}
