package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
)

// copyCases are OpenNMT-py's summarization variants: copy attention
// reusing the decoder's attention or with its own of each type, coverage
// and the three context gates, with both cells.
func copyCases() []toolkitCase {
	onmt := func(c attention.Config) attention.Config {
		c.Bidirectional, c.SrcVocab, c.TgtVocab, c.InputFeed = true, 23, 19, true
		c.EncoderHidden, c.CopyPad = c.Hidden/2, 1 // <blank>, OpenNMT-py's pad
		return c
	}
	return []toolkitCase{
		{name: "onmt-mlp/lstm/copy-reuse/bridge", format: "onmt-v3", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTMLP, Cell: attention.LSTM, Hidden: 12, Embedding: 7, Layers: 1, Bridge: "relu-linear", CopyAttention: "reuse"})},
		{name: "onmt-general/gru/copy-general", format: "onmt-v3", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTGeneral, Cell: attention.GRU, Hidden: 10, Embedding: 8, Layers: 2, CopyAttention: "general"})},
		{name: "onmt-mlp/lstm/copy-mlp/gate-source", format: "onmt-v3", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTMLP, Cell: attention.LSTM, Hidden: 10, Embedding: 6, Layers: 1, CopyAttention: "mlp", ContextGate: "source"})},
		{name: "onmt-dot/lstm/copy-dot/gate-target/coverage", format: "onmt-v3", batch: 1, cfg: onmt(attention.Config{Arch: attention.OpenNMTDot, Cell: attention.LSTM, Hidden: 12, Embedding: 12, Layers: 1, CopyAttention: "dot", ContextGate: "target", Coverage: true})},
		{name: "onmt-mlp/gru/copy-reuse/gate-both/L2", format: "onmt-v3", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTMLP, Cell: attention.GRU, Hidden: 8, Embedding: 6, Layers: 2, CopyAttention: "reuse", ContextGate: "both"})},
		{name: "onmt-general/lstm/gate-both/no-copy", format: "onmt-v3", batch: 4, cfg: func() attention.Config {
			c := onmt(attention.Config{Arch: attention.OpenNMTGeneral, Cell: attention.LSTM, Hidden: 10, Embedding: 8, Layers: 1, ContextGate: "both"})
			c.CopyPad = 0
			return c
		}()},
	}
}

// TestCopyLiveParity builds each copy, coverage and context-gate model
// with the PyTorch reference (reference/toolkits.py, written from
// OpenNMT-py's modules), saves it as OpenNMT-py 3 saves it, exports it with
// no options and compares every output of every decoder step
// step-isolated on both backends, copy_probs included; greedy decoding
// over the generator's share (what the reference's run decodes) is
// compared too, and the model exported at int8 translates with its
// dynamic vocabulary.
func TestCopyLiveParity(t *testing.T) {
	requireTorch(t)
	testenv.ORT(t, onnxrun.Init())
	cases := copyCases()
	dir := t.TempDir()
	p := func(i int, name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
	infos := prepareLive(t, dir, cases, 700, modeldir.Options{}, nil)

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := infos[i]
			for _, backend := range testBackends() {
				t.Run(backend, func(t *testing.T) {
					open := func(f string) *onnxrun.Session {
						s, err := onnxrun.Open(filepath.Join(p(i, "model"), f), onnxrun.Options{Backend: backend, IntraOpThreads: 1})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { s.Close() })
						return s
					}
					enc, dec := open(modeldir.EncoderFile), open(modeldir.DecoderFile)
					ids, lens, stepIDs, ref := readRun(t, p(i, "in.safetensors"), p(i, "out.safetensors"))
					if _, has := ref[attention.OutCopyProbs]; has != c.cfg.HasCopy() {
						t.Fatalf("the reference has copy_probs: %v, the model copy attention: %v", has, c.cfg.HasCopy())
					}
					par, err := CheckParity(enc, dec, ids, lens, stepIDs, ref)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range par.Failures() {
						t.Error(f)
					}
					compared := map[string]bool{}
					for _, r := range par.Isolated.Rows {
						compared[r.Output] = true
					}
					if c.cfg.HasCopy() && !compared[attention.OutCopyProbs] {
						t.Errorf("copy_probs were not compared (outputs %v)", compared)
					}
					refTokens, err := referenceGreedy(ref)
					if err != nil {
						t.Fatal(err)
					}
					sp := info.Special
					got, err := Greedy(enc, dec, ids, lens, sp.SOS, sp.EOS, liveSteps, nil)
					if err != nil {
						t.Fatal(err)
					}
					if g := compareGreedy("decoder.onnx", got.Tokens, refTokens, par.Free); !g.Identical {
						t.Errorf("greedy: %s", g.Detail)
					}
					t.Logf("step-isolated max abs error: %s", formatMaxAbs(par.Isolated.MaxAbs))
				})
			}
			// At int8 too, through translate with each sentence's
			// dynamic vocabulary (random weights: only that it decodes).
			dir := p(i, "model-int8")
			if _, err := modeldir.Export(p(i, "ckpt.pt"), dir, modeldir.Options{Weights: quant.PrecisionInt8}); err != nil {
				t.Fatalf("int8 export: %v", err)
			}
			tr, err := translate.Open(dir, translate.Options{Threads: 1, MaxLen: 6, Beam: 2, UnknownToUNK: true})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			words := strings.Fields("w1 w2 w3 w4 nowhere w5")
			res, err := tr.TranslateCall(context.Background(), []string{strings.Join(words, " ")}, translate.CallOptions{})
			if err != nil || len(res) != 1 || len(res[0].Tokens) == 0 {
				t.Fatalf("int8 translate: %v (%d results)", err, len(res))
			}
			if c.cfg.HasCopy() && res[0].SourceTokens[4] != "nowhere" {
				t.Errorf("source tokens %q: the word outside the vocabulary is lost", res[0].SourceTokens)
			}
		})
	}
}
