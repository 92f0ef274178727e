package attention

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// This file checks the graphs against PyTorch itself: testdata/torch_oracle.py
// builds small PyTorch modules of every architecture and cell from the
// spec's formulas, saves random models and their outputs, and the tests
// convert the saved state_dicts, run the graphs in ONNX Runtime and compare.

const oraclePython = "/usr/bin/python3"

// needDeps skips (or, under CI=true, fails) when PyTorch or ONNX Runtime
// is missing.
func needDeps(t *testing.T) {
	t.Helper()
	missing := func(what string, err error) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI: %v", what, err)
		}
		t.Skipf("%s not available: %v", what, err)
	}
	if out, err := exec.Command(oraclePython, "-c", "import torch").CombinedOutput(); err != nil {
		missing("PyTorch ("+oraclePython+" -c 'import torch')", fmt.Errorf("%v: %s", err, out))
	}
	if err := onnxrun.Init(); err != nil {
		missing("ONNX Runtime", err)
	}
}

// oracleCase is one model and input of torch_oracle.py.
type oracleCase struct {
	Name      string `json:"name"`
	Arch      Arch   `json:"arch"`
	Cell      Cell   `json:"cell"`
	Hidden    int    `json:"hidden"`
	Embedding int    `json:"embedding"`
	Layers    int    `json:"layers"`
	SrcVocab  int    `json:"src_vocab"`
	TgtVocab  int    `json:"tgt_vocab"`
	MaxLength int    `json:"max_length"`
	Batch     int    `json:"batch"`
	SrcLen    int    `json:"src_len"`
	Ragged    bool   `json:"ragged"`
	Steps     int    `json:"steps"`
	MaxLen    int    `json:"max_len"`
	SOS       int64  `json:"sos"`
	EOS       int64  `json:"eos"`
	PAD       int64  `json:"pad"`
	Seed      int    `json:"seed"`
}

func (c oracleCase) config() Config {
	return Config{Arch: c.Arch, Cell: c.Cell, Hidden: c.Hidden, Embedding: c.Embedding, Layers: c.Layers,
		SrcVocab: c.SrcVocab, TgtVocab: c.TgtVocab, MaxLength: c.MaxLength}
}

func (c oracleCase) special() Special { return Special{SOS: c.SOS, EOS: c.EOS, PAD: c.PAD, UNK: -1} }

// isTutorial reports whether a is one of the PyTorch tutorial's decoders.
func isTutorial(a Arch) bool { return a == TutorialLocation || a == TutorialBahdanau }

// parityCases covers every architecture with both cells (the tutorials'
// own GRU and, as their keys allow, LSTM) x {batch 1, ragged batch 4} x {L
// = 1, 2}, with odd hidden sizes and E != H but at batch 1 with one layer.
func parityCases() []oracleCase {
	var out []oracleCase
	seed := 100
	for _, a := range StateDictArchs {
		for _, cell := range Cells {
			for _, b := range []int{1, 4} {
				for _, l := range []int{1, 2} {
					seed++
					h := 7
					if (b == 4) != (l == 2) {
						h = 13
					}
					e := h
					switch {
					case b == 4 && l == 2:
						e = h - 4
					case b == 4 || l == 2:
						e = h + 2
					}
					c := oracleCase{Name: fmt.Sprintf("%s_%s_b%d_l%d_h%d_e%d", a, cell, b, l, h, e), Arch: a, Cell: cell,
						Hidden: h, Embedding: e, Layers: l, SrcVocab: 19, TgtVocab: 11, Batch: b, SrcLen: 9, Ragged: b > 1,
						Steps: 6, MaxLen: 12, SOS: 1, EOS: 2, PAD: 0, Seed: seed}
					if isTutorial(a) {
						// The tutorial's tokens: SOS 0, EOS 1 (and no PAD).
						c.SOS, c.EOS, c.PAD = 0, 1, 2
					}
					if a == TutorialLocation {
						c.MaxLength = 9 + 3*(l-1) // the source fills max_length, or not
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// runOracle runs torch_oracle.py mode over cases in dir.
func runOracle(t *testing.T, mode, dir string, cases []oracleCase) {
	t.Helper()
	data, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(list, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(oraclePython, "testdata/torch_oracle.py", mode, list, dir).CombinedOutput(); err != nil {
		t.Fatalf("torch_oracle.py %s: %v\n%s", mode, err, out)
	}
}

// built is a graph of one case: its file (for the ONNX checker) and session.
type built struct {
	path string
	s    *onnxrun.Session
}

func buildAndOpen(t *testing.T, dir, name string, build func() (*builder.Model, error)) built {
	t.Helper()
	m, err := build()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	data, err := onnxfile.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".onnx")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := onnxrun.OpenBytes(data, onnxrun.Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	return built{p, s}
}

// tensorOf converts a checkpoint tensor into a runtime tensor.
func tensorOf(t *testing.T, bt *builder.Tensor) *onnxrun.Tensor {
	t.Helper()
	switch bt.DType {
	case builder.Int64:
		v, err := bt.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		return onnxrun.NewInt64(bt.Dims, v)
	case builder.Float:
		return onnxrun.NewFloat32(bt.Dims, floats(t, bt))
	}
	t.Fatalf("tensor of %v", bt.DType)
	return nil
}

// parity accumulates the largest absolute error per output, in the order
// the outputs were first compared.
type parity struct {
	t      *testing.T
	order  []string
	maxAbs map[string]float64
}

// String lists "output error" pairs.
func (p *parity) String() string {
	parts := make([]string, len(p.order))
	for i, name := range p.order {
		parts[i] = fmt.Sprintf("%s %.1e", name, p.maxAbs[name])
	}
	return strings.Join(parts, ", ")
}

// float compares ONNX Runtime's output against PyTorch's.
func (p *parity) float(what string, got *onnxrun.Tensor, want *builder.Tensor) {
	p.t.Helper()
	if want == nil || got == nil {
		p.t.Errorf("%s: missing (got %v, PyTorch %v)", what, got != nil, want != nil)
		return
	}
	if !slices.Equal(got.Shape, want.Dims) {
		p.t.Errorf("%s: shape %v, PyTorch %v", what, got.Shape, want.Dims)
		return
	}
	g, err := got.Float32s()
	if err != nil {
		p.t.Fatal(err)
	}
	r := compare.Float32(g, floats(p.t, want), want.Dims, compare.Float32Tol)
	if !r.OK {
		p.t.Errorf("%s: %s", what, r)
	}
	name, _, _ := strings.Cut(what, "@")
	if _, seen := p.maxAbs[name]; !seen {
		p.order = append(p.order, name)
	}
	p.maxAbs[name] = max(p.maxAbs[name], r.MaxAbsErr)
}

// TestParityWithPyTorch runs every architecture x cell x batch x L of
// parityCases through PyTorch and through the graphs: the encoder, six
// chained decoder steps (every output of every step) and greedy.onnx
// (tokens identical, attention within tolerance), and for the tutorial
// architectures at batch 1 the tutorial's own way of decoding. Every graph
// passes the ONNX checker.
func TestParityWithPyTorch(t *testing.T) {
	needDeps(t)
	dir := t.TempDir()
	cases := parityCases()
	runOracle(t, "run", dir, cases)
	var files, table []string
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			cdir := filepath.Join(dir, c.Name)
			sd, err := checkpoint.Load(filepath.Join(cdir, "model.pt"))
			if err != nil {
				t.Fatal(err)
			}
			w, _, err := FromStateDict(sd.Tensors, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if w.Config != c.config() {
				t.Fatalf("inferred %v, want %v", w.Config, c.config())
			}
			io, err := checkpoint.Load(filepath.Join(cdir, "io.pt"))
			if err != nil {
				t.Fatal(err)
			}
			want := io.Tensors
			enc := buildAndOpen(t, cdir, "encoder", func() (*builder.Model, error) { return Encoder(w, BuildOptions{}) })
			dec := buildAndOpen(t, cdir, "decoder", func() (*builder.Model, error) { return Decoder(w, BuildOptions{}) })
			gr := buildAndOpen(t, cdir, "greedy", func() (*builder.Model, error) { return Greedy(w, c.special(), BuildOptions{}) })
			files = append(files, enc.path, dec.path, gr.path)

			p := &parity{t: t, maxAbs: map[string]float64{}}
			ids, lens := tensorOf(t, want["source_ids"]), tensorOf(t, want["source_lengths"])
			eo, err := enc.s.Run(map[string]*onnxrun.Tensor{InSourceIDs: ids, InSourceLengths: lens})
			if err != nil {
				t.Fatal(err)
			}
			p.float("encoder_outputs", eo[OutEncoder], want["encoder_outputs"])
			p.float("hidden", eo[OutHidden], want["hidden"])
			if _, ok := eo[OutCell]; ok != c.Cell.HasCellState() {
				t.Errorf("encoder has a cell output: %v, for a %s", ok, c.Cell)
			}
			if c.Cell.HasCellState() {
				p.float("cell", eo[OutCell], want["cell"])
			}
			steps := want["step_input_ids"]
			stepIDs, _ := steps.Int64s()
			hidden, cell := eo[OutHidden], eo[OutCell]
			for s := 0; s < c.Steps; s++ {
				in := map[string]*onnxrun.Tensor{
					InInputIDs: onnxrun.NewInt64([]int64{int64(c.Batch)}, stepIDs[s*c.Batch:(s+1)*c.Batch]),
					InHidden:   hidden, InEncoderOutputs: eo[OutEncoder], InSourceLengths: lens,
				}
				if cell != nil {
					in[InCell] = cell
				}
				out, err := dec.s.Run(in)
				if err != nil {
					t.Fatalf("step %d: %v", s, err)
				}
				for _, name := range []string{OutLogProbs, OutNextHidden, OutNextCell, OutAttention} {
					if name == OutNextCell && !c.Cell.HasCellState() {
						if _, ok := out[name]; ok {
							t.Errorf("a %s decoder has a %s output", c.Cell, name)
						}
						continue
					}
					p.float(fmt.Sprintf("%s@%d", name, s), out[name], want[fmt.Sprintf("%s.%d", name, s)])
				}
				hidden, cell = out[OutNextHidden], out[OutNextCell]
			}
			g, err := gr.s.Run(map[string]*onnxrun.Tensor{InSourceIDs: ids, InSourceLengths: lens, InMaxLen: onnxrun.Scalar(int64(c.MaxLen))})
			if err != nil {
				t.Fatal(err)
			}
			gotToks, _ := g[OutOutputIDs].Int64s()
			wantToks, _ := want["greedy_tokens"].Int64s()
			identical := slices.Equal(g[OutOutputIDs].Shape, want["greedy_tokens"].Dims) && slices.Equal(gotToks, wantToks)
			if !identical {
				t.Errorf("greedy tokens %v %v, PyTorch %v %v", g[OutOutputIDs].Shape, gotToks, want["greedy_tokens"].Dims, wantToks)
			} else {
				p.float("greedy attention", g[OutAttentions], want["greedy_attention"])
			}
			// Rows that stopped at EOS (their tail is PAD in both).
			T, eosRows := int(want["greedy_tokens"].Dims[1]), 0
			for r := 0; r < c.Batch && identical; r++ {
				if slices.Contains(wantToks[r*T:(r+1)*T], c.EOS) {
					eosRows++
				}
			}
			tutorial := "-"
			if tt := want["tutorial_tokens"]; tt != nil {
				// The tutorial decodes one sentence and stops at EOS (kept).
				tut, _ := tt.Int64s()
				ours := gotToks
				if i := slices.Index(ours, c.EOS); i >= 0 {
					ours = ours[:i+1]
				}
				tutorial = fmt.Sprint(slices.Equal(ours, tut))
				if !slices.Equal(ours, tut) {
					t.Errorf("greedy.onnx tokens %v, the tutorial's own way %v", ours, tut)
				}
			}
			table = append(table, fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %s | %v (%d/%d rows end at EOS) | %s |", c.Arch, c.Cell, c.Batch, c.Layers, c.Hidden, c.Embedding,
				p, identical, eosRows, c.Batch, tutorial))
		})
	}
	checked := fmt.Sprintf("%d graphs pass onnx.checker full_check", len(files))
	if err := onnxcheck.CheckFiles(files...); err != nil {
		if os.Getenv("CI") != "" || onnxcheck.Available() == nil {
			t.Error(err)
		}
		checked = fmt.Sprintf("the ONNX checker did not run: %v", err)
	}
	t.Logf("parity with PyTorch (max abs error per output over all steps; %s):\n"+
		"| arch | cell | batch | L | H | E | max abs error | greedy tokens identical | tutorial's own way identical |\n|---|---|---|---|---|---|---|---|---|\n%s",
		checked, strings.Join(table, "\n"))
}

// TestNodeCountsVsTorchExport compares the node counts of the encoder and
// decoder step graphs with torch.onnx.export's (opset 17) for the same
// PyTorch modules, one per architecture and cell (L = 2, H = 13, E = 9).
func TestNodeCountsVsTorchExport(t *testing.T) {
	needDeps(t)
	if err := exec.Command(oraclePython, "-c", "import onnx").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3-onnx is required in CI: %v", err)
		}
		t.Skip("python3-onnx not installed")
	}
	var cases []oracleCase
	for i, a := range StateDictArchs {
		for _, cell := range Cells {
			c := oracleCase{Name: fmt.Sprintf("%s_%s", a, cell), Arch: a, Cell: cell, Hidden: 13, Embedding: 9, Layers: 2,
				SrcVocab: 19, TgtVocab: 11, Batch: 1, SrcLen: 7, Steps: 1, MaxLen: 1, SOS: 1, EOS: 2, Seed: 300 + i}
			if a == TutorialLocation {
				c.MaxLength = 10
			}
			cases = append(cases, c)
		}
	}
	dir := t.TempDir()
	runOracle(t, "export", dir, cases)
	rows := []string{}
	for _, c := range cases {
		var rep struct {
			Encoder int `json:"encoder_nodes"`
			Decoder int `json:"decoder_nodes"`
		}
		data, err := os.ReadFile(filepath.Join(dir, c.Name, "torch_export.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		sd, err := checkpoint.Load(filepath.Join(dir, c.Name, "model.pt"))
		if err != nil {
			t.Fatal(err)
		}
		w, _, err := FromStateDict(sd.Tensors, Options{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := Encoder(w, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decoder(w, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ne, nd := len(e.Graph.Nodes()), len(d.Graph.Nodes())
		rows = append(rows, fmt.Sprintf("| %s | %s | %d | %d | %d | %d |", c.Arch, c.Cell, ne, rep.Encoder, nd, rep.Decoder))
		if nd > rep.Decoder {
			t.Errorf("%s: attnx's decoder step has %d nodes, torch.onnx.export's %d", c.Name, nd, rep.Decoder)
		}
	}
	t.Logf("node counts (L=2, H=13, E=9; torch.onnx.export opset 17, traced at batch 1):\n"+
		"| arch | cell | attnx encoder | torch encoder | attnx decoder step | torch decoder step |\n|---|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
}
