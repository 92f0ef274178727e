package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/export"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/runtime"
)

type fixture struct {
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	Arch   string `json:"arch"`
	Batch  int    `json:"batch"`
	Layers int    `json:"layers"`
	Hidden int    `json:"hidden"`
	Steps  int    `json:"steps"`
}

const fixtureDir = "../testdata/fixtures"

func loadManifest(t *testing.T) []fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Fixtures []fixture }
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Fixtures) < 8 {
		t.Fatalf("manifest lists %d fixtures, want 8", len(m.Fixtures))
	}
	return m.Fixtures
}

// openModel builds, checks and opens the encoder and decoder of a checkpoint.
func openModel(t *testing.T, ckpt string) (w *attention.Weights, enc, dec *runtime.Session) {
	t.Helper()
	sd, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	w, _, err = attention.FromStateDict(sd.Tensors, attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sessions []*runtime.Session
	for _, build := range []func(*attention.Weights) (*builder.Model, error){attention.Encoder, attention.Decoder} {
		m, err := build(w)
		if err != nil {
			t.Fatal(err)
		}
		data, err := export.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		onnxcheck.Check(t, data)
		s, err := runtime.OpenBytes(data, runtime.Options{IntraOpThreads: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		sessions = append(sessions, s)
	}
	return w, sessions[0], sessions[1]
}

// fixtureInputs reads a fixture's inputs and the reference's step inputs.
func fixtureInputs(t *testing.T, dir string) (ids *runtime.Tensor, lens []int64, steps [][]int64, want map[string]*builder.Tensor) {
	t.Helper()
	in, err := checkpoint.LoadSafetensors(filepath.Join(dir, "inputs.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := checkpoint.LoadSafetensors(filepath.Join(dir, "expected.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	src := in.Tensors["source_ids"]
	idv, _ := src.Int64s()
	lens, _ = in.Tensors["source_lengths"].Int64s()
	si := exp.Tensors["step_input_ids"]
	flat, _ := si.Int64s()
	T, B := int(si.Dims[0]), int(si.Dims[1])
	for s := 0; s < T; s++ {
		steps = append(steps, flat[s*B:(s+1)*B])
	}
	return runtime.NewInt64(src.Dims, idv), lens, steps, exp.Tensors
}

func TestFixturesMatchPyTorch(t *testing.T) {
	if err := runtime.Init(); err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	for _, f := range loadManifest(t) {
		t.Run(f.Name, func(t *testing.T) {
			dir := filepath.Join(fixtureDir, f.Dir)
			w, enc, dec := openModel(t, filepath.Join(dir, "checkpoint.pt"))
			if string(w.Config.Arch) != f.Arch || w.Config.Layers != f.Layers || w.Config.Hidden != f.Hidden {
				t.Fatalf("inferred %v, manifest says %s H=%d L=%d", w.Config, f.Arch, f.Hidden, f.Layers)
			}
			ids, lens, steps, want := fixtureInputs(t, dir)
			tr, err := Run(enc, dec, ids, lens, steps)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Compare(tr, want, Tolerance)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Rows {
				if !r.OK {
					t.Errorf("step %d %s: %s", r.Step, r.Output, r.Detail)
				}
			}
			t.Logf("%s: max abs %v, tokens identical %v", f.Name, rep.MaxAbs, rep.TokensIdentical)
		})
	}
}
