package onnxeval

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpenBytes feeds arbitrary bytes to the native evaluator as a model
// file: it loads or refuses them, and a model it loads runs on zero inputs
// (unknown dimensions 2) to a result or an error, under a small memory
// limit, a Loop limit and a deadline, never a panic or an out-of-memory
// throw. The seeds are the onnxrun test models and testdata/crafted.
func FuzzOpenBytes(f *testing.F) {
	// The onnxrun test models, and the crafted models that once ended the
	// process (issue 36).
	files, _ := filepath.Glob("../onnxrun/testdata/*.onnx")
	crafted, _ := filepath.Glob("testdata/crafted/*.onnx")
	for _, p := range append(files, crafted...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := OpenBytes(data, Options{Threads: 1, MaxRunBytes: 64 << 20, MaxLoopIterations: 1000})
		if err != nil {
			return
		}
		in := make([]*Tensor, len(m.inputs))
		for i, v := range m.inputs {
			elem, ok := v.Type.TensorElem()
			if !ok || !supported(elem) {
				return
			}
			shape := make([]int64, len(v.Type.Shape))
			for k, d := range v.Type.Shape {
				shape[k] = 2
				if d.Known() {
					shape[k] = d.Value
				}
			}
			n, err := elements(shape)
			if err != nil || n > 1<<20 {
				return
			}
			d, err := makeData(elem, n)
			if err != nil {
				return
			}
			in[i] = &Tensor{DType: elem, Shape: shape, Data: d}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m.RunContext(ctx, in)
	})
}
