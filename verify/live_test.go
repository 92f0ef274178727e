package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/runtime"
)

// requireTorch skips when Debian's PyTorch is absent; `make test` installs it,
// so under CI=true a missing torch fails instead.
func requireTorch(t *testing.T) {
	t.Helper()
	testenv.Torch(t)
}

// runReference runs the embedded PyTorch reference's reference.py.
func runReference(t *testing.T, args ...string) {
	t.Helper()
	fixtures.Reference(t, args...)
}

type liveConfig struct {
	arch          attention.Arch
	batch, layers int
	hidden        int
}

func (c liveConfig) name() string {
	return fmt.Sprintf("%s/b%d/l%d/h%d", c.arch, c.batch, c.layers, c.hidden)
}

// liveConfigs covers every architecture x {batch 1, batch 4 ragged} x
// {L=1, L=2}, with odd hidden sizes 13 and 37 each used for every arch.
func liveConfigs() []liveConfig {
	var out []liveConfig
	for _, a := range attention.Archs {
		for _, b := range []int{1, 4} {
			for _, l := range []int{1, 2} {
				h := 13
				if (b == 4) != (l == 2) {
					h = 37
				}
				out = append(out, liveConfig{a, b, l, h})
			}
		}
	}
	return out
}

// TestLiveParityWithPyTorch has PyTorch create fresh random models at test
// time and compares every output of every step (12 greedy steps).
func TestLiveParityWithPyTorch(t *testing.T) {
	requireTorch(t)
	if err := runtime.Init(); err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	const steps, srcLen = 12, 9
	var table []string
	for i, c := range liveConfigs() {
		t.Run(c.name(), func(t *testing.T) {
			dir := t.TempDir()
			ckpt, in, out := filepath.Join(dir, "model.pt"), filepath.Join(dir, "in.safetensors"), filepath.Join(dir, "out.safetensors")
			seed := fmt.Sprint(7000 + i)
			runReference(t, "make-model", "--arch", string(c.arch), "--hidden", fmt.Sprint(c.hidden), "--layers", fmt.Sprint(c.layers),
				"--src-vocab", "31", "--tgt-vocab", "29", "--seed", seed, "--out", ckpt)
			args := []string{"random-inputs", "--batch", fmt.Sprint(c.batch), "--src-len", fmt.Sprint(srcLen), "--src-vocab", "31", "--seed", seed, "--out", in}
			if c.batch > 1 {
				args = append(args, "--ragged")
			}
			runReference(t, args...)
			runReference(t, "run", "--checkpoint", ckpt, "--inputs", in, "--steps", fmt.Sprint(steps), "--out", out)

			_, enc, dec := openModel(t, ckpt)
			ids, lens, stepIDs, want := readRun(t, in, out)
			if len(stepIDs) != steps {
				t.Fatalf("reference ran %d steps, want %d", len(stepIDs), steps)
			}
			tr, err := Run(enc, dec, ids, lens, stepIDs)
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
			checkGreedy(t, ckpt, ids, lens, want, attention.DefaultSpecial, steps)
			table = append(table, fmt.Sprintf("| %s | %d | %d | %d | %s | %v |", c.arch, c.batch, c.layers, c.hidden, formatMaxAbs(rep.MaxAbs), rep.TokensIdentical))
		})
	}
	t.Logf("parity table (max abs error per output over all steps):\n| arch | batch | L | H | max abs err | tokens identical |\n|---|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

func formatMaxAbs(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.1e", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func readRun(t *testing.T, inPath, outPath string) (*runtime.Tensor, []int64, [][]int64, map[string]*builder.Tensor) {
	t.Helper()
	d := fixtures.LoadFiles(t, inPath, outPath)
	return sourceTensor(t, d), d.Lengths, d.StepInputs, d.Expected
}

// TestTorchOnnxExportAgrees exports each architecture with torch.onnx.export
// (opset 17), runs that file through package runtime at batch 1 and checks it
// computes what attnx's graphs compute; it also logs both node counts.
func TestTorchOnnxExportAgrees(t *testing.T) {
	requireTorch(t)
	testenv.PythonONNX(t)
	var counts []string
	for _, arch := range attention.Archs {
		t.Run(string(arch), func(t *testing.T) {
			dir := t.TempDir()
			ckpt, in, out := filepath.Join(dir, "m.pt"), filepath.Join(dir, "in.safetensors"), filepath.Join(dir, "out.safetensors")
			runReference(t, "make-model", "--arch", string(arch), "--hidden", "13", "--layers", "2", "--src-vocab", "31", "--tgt-vocab", "29", "--seed", "11", "--out", ckpt)
			runReference(t, "random-inputs", "--batch", "1", "--src-len", "8", "--src-vocab", "31", "--seed", "11", "--out", in)
			runReference(t, "run", "--checkpoint", ckpt, "--inputs", in, "--steps", "10", "--out", out)
			runReference(t, "export-onnx", "--checkpoint", ckpt, "--out-dir", filepath.Join(dir, "torch"))

			w, enc, dec := openModel(t, ckpt)
			ids, lens, stepIDs, want := readRun(t, in, out)
			ours, err := Run(enc, dec, ids, lens, stepIDs)
			if err != nil {
				t.Fatal(err)
			}
			var torchSessions []*runtime.Session
			for _, f := range []string{"encoder.onnx", "decoder.onnx"} {
				s, err := runtime.Open(filepath.Join(dir, "torch", f), runtime.Options{IntraOpThreads: 1})
				if err != nil {
					t.Fatalf("torch.onnx.export's %s: %v", f, err)
				}
				defer s.Close()
				torchSessions = append(torchSessions, s)
			}
			theirs, err := Run(torchSessions[0], torchSessions[1], ids, lens, stepIDs)
			if err != nil {
				t.Fatalf("running torch.onnx.export's graphs: %v", err)
			}
			for _, tr := range []struct {
				name string
				tr   *Trace
			}{{"attnx", ours}, {"torch.onnx.export", theirs}} {
				rep, err := Compare(tr.tr, want, Tolerance)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.OK {
					for _, r := range rep.Rows {
						if !r.OK {
							t.Errorf("%s vs PyTorch: step %d %s: %s", tr.name, r.Step, r.Output, r.Detail)
						}
					}
				}
			}
			var rep struct {
				Encoder struct{ Nodes int } `json:"encoder"`
				Decoder struct{ Nodes int } `json:"decoder"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "torch", "torch_export.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			encM, _ := attention.Encoder(w, attention.BuildOptions{})
			decM, _ := attention.Decoder(w, attention.BuildOptions{})
			ne, nd := len(encM.Graph.Nodes()), len(decM.Graph.Nodes())
			counts = append(counts, fmt.Sprintf("| %s (L=2) | %d | %d | %d | %d |", arch, ne, rep.Encoder.Nodes, nd, rep.Decoder.Nodes))
			if nd > rep.Decoder.Nodes {
				t.Errorf("attnx decoder has %d nodes, torch.onnx.export's %d: ours should be leaner", nd, rep.Decoder.Nodes)
			}
		})
	}
	t.Logf("node counts:\n| model | attnx encoder | torch encoder | attnx decoder | torch decoder |\n|---|---|---|---|---|\n%s", strings.Join(counts, "\n"))
}
