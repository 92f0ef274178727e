// Package ortest opens and runs, in ONNX Runtime, the models that tests
// build, for the tests of several packages (ops, quant/...).
package ortest

import (
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// Require initialises ONNX Runtime, ending the test as testenv.ORT says
// when it cannot be used.
func Require(t testing.TB) {
	t.Helper()
	testenv.ORT(t, onnxrun.Init())
}

// Open marshals m and opens it in ONNX Runtime with one thread and opt's
// other settings; the session is closed when the test ends.
func Open(t testing.TB, m *builder.Model, opt onnxrun.Options) *onnxrun.Session {
	t.Helper()
	Require(t)
	if err := m.Check(); err != nil {
		t.Fatalf("building: %v", err)
	}
	data, err := onnxfile.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	opt.IntraOpThreads, opt.InterOpThreads = 1, 1
	if opt.Backend == "" {
		opt.Backend = onnxrun.BackendORT // what these tests check: not the default (native) backend
	}
	s, err := onnxrun.OpenBytes(data, opt)
	if err != nil {
		t.Fatalf("loading in ONNX Runtime: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Run builds g's model, runs it once on feeds and returns its outputs.
func Run(t testing.TB, g *builder.Graph, feeds map[string]*onnxrun.Tensor) map[string]*onnxrun.Tensor {
	t.Helper()
	out, err := Open(t, builder.NewModel(g), onnxrun.Options{}).Run(feeds)
	if err != nil {
		t.Fatalf("running: %v", err)
	}
	return out
}

// Floats is Run for models whose outputs are all float32.
func Floats(t testing.TB, g *builder.Graph, feeds map[string]*onnxrun.Tensor) map[string][]float32 {
	t.Helper()
	res := map[string][]float32{}
	for name, v := range Run(t, g, feeds) {
		f, err := v.Float32s()
		if err != nil {
			t.Fatalf("output %s: %v", name, err)
		}
		res[name] = f
	}
	return res
}
