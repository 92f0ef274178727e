package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
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
	arch                         attention.Arch
	cell                         attention.Cell
	batch, layers                int
	hidden, embedding, maxLength int
}

func (c liveConfig) name() string {
	n := fmt.Sprintf("%s/%s/b%d/l%d/h%d", c.arch, c.cell, c.batch, c.layers, c.hidden)
	if c.embedding != c.hidden {
		n += fmt.Sprintf("/e%d", c.embedding)
	}
	if c.maxLength > 0 {
		n += fmt.Sprintf("/m%d", c.maxLength)
	}
	return n
}

// special is the special tokens the config's model decodes with: the
// tutorial's for the tutorial's architectures.
func (c liveConfig) special() attention.Special { return attention.DefaultSpecialFor(c.arch) }

const liveSteps, liveSrcLen = 12, 9

// liveConfigs covers every architecture with every cell the PyTorch
// reference has for it (the article's: LSTM and GRU; the tutorial's: GRU)
// x {batch 1, batch 4 ragged} x {L=1, L=2}, with odd hidden sizes 13 and
// 37 each used for every arch and cell, and the embedding size E = 10 != H
// everywhere but at batch 1 with one layer, the article's own case. The
// tutorial-location decoder attends over M = src_len (9) at batch 1 and
// M = 12 > src_len at batch 4.
func liveConfigs() []liveConfig {
	var out []liveConfig
	for _, a := range attention.StateDictArchs {
		cells := attention.Cells
		if a.IsTutorial() {
			cells = []attention.Cell{attention.GRU}
		}
		for _, cell := range cells {
			for _, b := range []int{1, 4} {
				for _, l := range []int{1, 2} {
					c := liveConfig{arch: a, cell: cell, batch: b, layers: l, hidden: 13, embedding: 10}
					if (b == 4) != (l == 2) {
						c.hidden = 37
					}
					if b == 1 && l == 1 {
						c.embedding = c.hidden
					}
					if a == attention.TutorialLocation {
						c.maxLength = liveSrcLen
						if b == 4 {
							c.maxLength = 12
						}
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// liveJobs are the reference.py jobs that make config i's model, inputs and
// reference run in dir.
func (c liveConfig) jobs(i int, dir string) [][]string {
	seed := fmt.Sprint(7000 + i)
	p := func(name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
	mk := []string{"make-model", "--arch", string(c.arch), "--cell", string(c.cell), "--hidden", fmt.Sprint(c.hidden),
		"--embedding-size", fmt.Sprint(c.embedding), "--layers", fmt.Sprint(c.layers), "--src-vocab", "31", "--tgt-vocab", "29",
		"--seed", seed, "--out", p("model.pt")}
	if c.maxLength > 0 {
		mk = append(mk, "--max-length", fmt.Sprint(c.maxLength))
	}
	in := []string{"random-inputs", "--batch", fmt.Sprint(c.batch), "--src-len", fmt.Sprint(liveSrcLen), "--src-vocab", "31",
		"--seed", seed, "--out", p("in.safetensors")}
	if c.batch > 1 {
		in = append(in, "--ragged")
	}
	sp := c.special()
	run := []string{"run", "--checkpoint", p("model.pt"), "--inputs", p("in.safetensors"), "--steps", fmt.Sprint(liveSteps),
		"--sos", fmt.Sprint(sp.SOS), "--eos", fmt.Sprint(sp.EOS), "--pad", fmt.Sprint(sp.PAD), "--rounding", "--out", p("out.safetensors")}
	return [][]string{mk, in, run}
}

// runReferenceJobs runs reference.py jobs in one Python process (its
// batch subcommand), which pays torch's start-up once.
func runReferenceJobs(t *testing.T, dir string, jobs [][]string) {
	t.Helper()
	data, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jobs.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	runReference(t, "batch", path)
}

// TestLiveParityWithPyTorch has PyTorch create fresh random models of every
// architecture and cell at test time (liveConfigs) and compares every
// output of every step (12 steps, fed PyTorch's own argmax tokens) within
// the spec's tolerance, the per-step tokens, and greedy decoding with
// decoder.onnx step by step through the decoding core and with
// greedy.onnx. The reference runs once for all configurations; the
// configurations then run in parallel.
func TestLiveParityWithPyTorch(t *testing.T) {
	requireTorch(t)
	testenv.ORT(t, onnxrun.Init())
	configs := liveConfigs()
	dir := t.TempDir()
	var jobs [][]string
	for i, c := range configs {
		jobs = append(jobs, c.jobs(i, dir)...)
	}
	runReferenceJobs(t, dir, jobs)

	var mu sync.Mutex
	table := make([]string, len(configs))
	t.Run("configs", func(t *testing.T) {
		for i, c := range configs {
			t.Run(c.name(), func(t *testing.T) {
				t.Parallel()
				p := func(name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
				for _, backend := range testBackends() {
					row := liveRow(t, c, p, backend)
					mu.Lock()
					table[i] += row
					mu.Unlock()
				}
			})
		}
	})
	t.Logf("parity table (step-isolated max abs error per output over all steps, free-running log_probs drift at the worst step; tokens: per-step argmax both ways, decoder.onnx greedy and greedy.onnx all equal PyTorch's up to the near ties counted), on each backend:\n"+
		"| arch | cell | backend | batch | L | H | E | M | step-isolated max abs err | free-running log_probs drift | tokens identical | near ties |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n%s", strings.TrimSuffix(strings.Join(table, ""), "\n"))
}

// liveRow checks one configuration's reference run on backend and returns
// its row of the parity table.
func liveRow(t *testing.T, c liveConfig, p func(string) string, backend string) (row string) {
	t.Run(backend, func(t *testing.T) {
		w, enc, dec := openModelOn(t, p("model.pt"), backend)
		want := attention.Config{Arch: c.arch, Cell: c.cell, Hidden: c.hidden, Embedding: c.embedding, Layers: c.layers,
			SrcVocab: 31, TgtVocab: 29, MaxLength: c.maxLength}
		if w.Config != want {
			t.Fatalf("converted to %v, want %v", w.Config, want)
		}
		ids, lens, stepIDs, ref := readRun(t, p("in.safetensors"), p("out.safetensors"))
		if len(stepIDs) != liveSteps {
			t.Fatalf("reference ran %d steps, want %d", len(stepIDs), liveSteps)
		}
		par, err := CheckParity(enc, dec, ids, lens, stepIDs, ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range par.Failures() {
			t.Error(f)
		}
		ties := checkGreedy(t, w, enc, dec, ids, lens, ref, c.special(), liveSteps, par.Free)
		ties += len(par.Isolated.NearTies) + len(par.Free.NearTies)
		rep := par.Isolated
		M := "-"
		if c.maxLength > 0 {
			M = fmt.Sprint(c.maxLength)
		}
		row = fmt.Sprintf("| %s | %s | %s | %d | %d | %d | %d | %s | %s | %.1e | %v | %d |\n", c.arch, c.cell, backend, c.batch, c.layers, c.hidden, c.embedding, M,
			formatMaxAbs(rep.MaxAbs), par.Free.MaxAbs["log_probs"], par.OK && !t.Failed(), ties)
	})
	return row
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

func readRun(t *testing.T, inPath, outPath string) (*onnxrun.Tensor, []int64, [][]int64, map[string]*builder.Tensor) {
	t.Helper()
	d := fixtures.LoadFiles(t, inPath, outPath)
	return sourceTensor(t, d), d.Lengths, d.StepInputs, d.Expected
}

// TestTorchOnnxExportAgrees exports each architecture with each cell with
// torch.onnx.export (opset 17), runs that file through package onnxrun at
// batch 1 and checks it computes what attnx's graphs compute; it also logs
// both node counts. The reference runs once for all of them.
func TestTorchOnnxExportAgrees(t *testing.T) {
	if !onnxrun.HasORT {
		t.Skip("torch.onnx.export's graphs use operators the native backend lacks (ScatterElements): they run on ONNX Runtime, in a build with cgo")
	}
	requireTorch(t)
	testenv.PythonONNX(t)
	type model struct {
		arch attention.Arch
		cell attention.Cell
	}
	var models []model
	for _, a := range attention.StateDictArchs {
		for _, cell := range attention.Cells {
			if !a.IsTutorial() || cell == attention.GRU {
				models = append(models, model{a, cell})
			}
		}
	}
	dir := t.TempDir()
	var jobs [][]string
	for i, m := range models {
		p := func(name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
		mk := []string{"make-model", "--arch", string(m.arch), "--cell", string(m.cell), "--hidden", "13", "--layers", "2",
			"--src-vocab", "31", "--tgt-vocab", "29", "--seed", "11", "--out", p("m.pt")}
		sp := attention.DefaultSpecialFor(m.arch)
		jobs = append(jobs, mk,
			[]string{"random-inputs", "--batch", "1", "--src-len", "8", "--src-vocab", "31", "--seed", "11", "--out", p("in.safetensors")},
			[]string{"run", "--checkpoint", p("m.pt"), "--inputs", p("in.safetensors"), "--steps", "10",
				"--sos", fmt.Sprint(sp.SOS), "--eos", fmt.Sprint(sp.EOS), "--pad", fmt.Sprint(sp.PAD), "--rounding", "--out", p("out.safetensors")},
			[]string{"export-onnx", "--checkpoint", p("m.pt"), "--out-dir", p("torch")})
	}
	runReferenceJobs(t, dir, jobs)

	var mu sync.Mutex
	counts := make([]string, len(models))
	t.Run("models", func(t *testing.T) {
		for i, m := range models {
			t.Run(string(m.arch)+"/"+string(m.cell), func(t *testing.T) {
				t.Parallel()
				p := func(name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
				w, enc, dec := openModel(t, p("m.pt"))
				ids, lens, stepIDs, want := readRun(t, p("in.safetensors"), p("out.safetensors"))
				var torchSessions []*onnxrun.Session
				for _, f := range []string{"encoder.onnx", "decoder.onnx"} {
					s, err := onnxrun.Open(filepath.Join(p("torch"), f), onnxrun.Options{IntraOpThreads: 1, Backend: onnxrun.BackendORT})
					if err != nil {
						t.Fatalf("torch.onnx.export's %s: %v", f, err)
					}
					defer s.Close()
					torchSessions = append(torchSessions, s)
				}
				for _, g := range []struct {
					name     string
					enc, dec *onnxrun.Session
				}{{"attnx", enc, dec}, {"torch.onnx.export", torchSessions[0], torchSessions[1]}} {
					par, err := CheckParity(g.enc, g.dec, ids, lens, stepIDs, want)
					if err != nil {
						t.Fatalf("%s: %v", g.name, err)
					}
					for _, f := range par.Failures() {
						t.Errorf("%s vs PyTorch: %s", g.name, f)
					}
				}
				var rep struct {
					Encoder struct{ Nodes int } `json:"encoder"`
					Decoder struct{ Nodes int } `json:"decoder"`
				}
				data, err := os.ReadFile(filepath.Join(p("torch"), "torch_export.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(data, &rep); err != nil {
					t.Fatal(err)
				}
				encM, _ := attention.Encoder(w, attention.BuildOptions{})
				decM, _ := attention.Decoder(w, attention.BuildOptions{})
				ne, nd := len(encM.Graph.Nodes()), len(decM.Graph.Nodes())
				mu.Lock()
				counts[i] = fmt.Sprintf("| %s | %s | %d | %d | %d | %d |", m.arch, m.cell, ne, rep.Encoder.Nodes, nd, rep.Decoder.Nodes)
				mu.Unlock()
				if nd > rep.Decoder.Nodes {
					t.Errorf("attnx decoder has %d nodes, torch.onnx.export's %d: ours should be leaner", nd, rep.Decoder.Nodes)
				}
			})
		}
	})
	t.Logf("node counts (H=13, L=2):\n| arch | cell | attnx encoder | torch encoder | attnx decoder | torch decoder |\n|---|---|---|---|---|---|\n%s", strings.Join(counts, "\n"))
}
