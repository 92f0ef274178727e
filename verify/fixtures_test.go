package verify

import (
	"github.com/attnx/attnx/internal/testenv"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// openModel builds, checks and opens the encoder and decoder of a checkpoint.
func openModel(t *testing.T, ckpt string) (w *attention.Weights, enc, dec *onnxrun.Session) {
	t.Helper()
	return openModelOn(t, ckpt, "")
}

// openModelOn is openModel on backend ("" for the default).
func openModelOn(t *testing.T, ckpt, backend string) (w *attention.Weights, enc, dec *onnxrun.Session) {
	t.Helper()
	w = fixtures.Weights(t, ckpt)
	enc, dec = openWeightsOn(t, w, backend)
	return w, enc, dec
}

// testBackends are the backends the live parity suites run on: ONNX
// Runtime and the native evaluator in a build with cgo, the native one
// alone without.
func testBackends() []string {
	if onnxrun.HasORT {
		return []string{onnxrun.BackendORT, onnxrun.BackendGo}
	}
	return []string{onnxrun.BackendGo}
}

// openChecked marshals a built model, runs the ONNX checker on it and opens
// it in ONNX Runtime; the session is closed when the test ends.
func openChecked(t *testing.T, m *builder.Model) *onnxrun.Session {
	t.Helper()
	return openCheckedOn(t, m, "")
}

// openCheckedOn is openChecked on backend ("" for the default).
func openCheckedOn(t *testing.T, m *builder.Model, backend string) *onnxrun.Session {
	t.Helper()
	data, err := onnxfile.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	onnxcheck.Check(t, data)
	s, err := onnxrun.OpenBytes(data, onnxrun.Options{Backend: backend, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sourceTensor returns a reference run's source_ids as a runtime tensor.
func sourceTensor(t *testing.T, d *fixtures.Data) *onnxrun.Tensor {
	t.Helper()
	ids, err := onnxrun.FromBuilder(d.SourceIDs)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestFixturesMatchPyTorch(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	for _, f := range fixtures.List(t) {
		t.Run(f.Name, func(t *testing.T) {
			w, enc, dec := openModel(t, f.Path(t, "checkpoint.pt"))
			if string(w.Config.Arch) != f.Arch || w.Config.Layers != f.Layers || w.Config.Hidden != f.Hidden {
				t.Fatalf("inferred %v, manifest says %s H=%d L=%d", w.Config, f.Arch, f.Hidden, f.Layers)
			}
			d := fixtures.Load(t, f.Path(t, ""))
			par, err := CheckParity(enc, dec, sourceTensor(t, d), d.Lengths, d.StepInputs, d.Expected)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range par.Failures() {
				t.Error(f)
			}
			t.Logf("%s: step-isolated max abs %v, free-running drift %v, near ties %d", f.Name, par.Isolated.MaxAbs, par.Free.MaxAbs,
				len(par.Isolated.NearTies)+len(par.Free.NearTies))
		})
	}
}
