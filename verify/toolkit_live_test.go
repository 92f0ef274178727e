package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/attnx/attnx/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
)

// toolkitCase is one toolkit model of the live suite: the configuration
// PyTorch builds it with (attnx.json's fields), the layout its toolkit
// saves it in (reference.py make-toolkit --format) and the batch.
type toolkitCase struct {
	name   string
	format string
	cfg    attention.Config
	batch  int
}

// toolkitCases covers every toolkit architecture with both cells where
// the toolkit has them, bidirectional and (OpenNMT-py) unidirectional
// encoders, input feeding on and off, every attention type, one and two
// layers (encoder and decoder layers differing where the toolkit allows
// it), every bridge, fairseq's projections, additional_fc and tied output,
// every save layout, batch 1 and ragged batch 4.
func toolkitCases() []toolkitCase {
	bi := func(c attention.Config) attention.Config {
		c.Bidirectional, c.SrcVocab, c.TgtVocab = true, 23, 19
		return c
	}
	onmt := func(c attention.Config) attention.Config {
		c = bi(c)
		c.EncoderHidden = c.Hidden / 2
		return c
	}
	fairseq := func(c attention.Config) attention.Config {
		c.Cell, c.InputFeed, c.SrcVocab, c.TgtVocab = attention.LSTM, true, 23, 19
		return c
	}
	uni := onmt(attention.Config{Arch: attention.OpenNMTDot, Cell: attention.GRU, Hidden: 12, Embedding: 7, Layers: 1, InputFeed: true})
	uni.Bidirectional, uni.EncoderHidden = false, 0
	return []toolkitCase{
		{name: "onmt-dot/lstm/if/L1", format: "onmt-v3", batch: 1, cfg: onmt(attention.Config{Arch: attention.OpenNMTDot, Cell: attention.LSTM, Hidden: 12, Embedding: 12, Layers: 1, InputFeed: true})},
		{name: "onmt-general/lstm/if/L2/bridge", format: "onmt-v3", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTGeneral, Cell: attention.LSTM, Hidden: 14, Embedding: 9, TgtEmbedding: 11, Layers: 2, InputFeed: true, Bridge: "relu-linear"})},
		{name: "onmt-mlp/gru/if/L2", format: "onmt-v3", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTMLP, Cell: attention.GRU, Hidden: 10, Embedding: 8, Layers: 2, InputFeed: true})},
		{name: "onmt-general/gru/std/L1", format: "onmt-v3", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTGeneral, Cell: attention.GRU, Hidden: 12, Embedding: 8, Layers: 1})},
		{name: "onmt-mlp/lstm/std/L2/bridge", format: "onmt-v3", batch: 1, cfg: onmt(attention.Config{Arch: attention.OpenNMTMLP, Cell: attention.LSTM, Hidden: 8, Embedding: 6, Layers: 2, Bridge: "relu-linear"})},
		{name: "onmt-dot/gru/if/L1/unidirectional", format: "onmt-v3", batch: 4, cfg: uni},
		{name: "onmt-general/lstm/if/L2/v2", format: "onmt-v2", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTGeneral, Cell: attention.LSTM, Hidden: 10, Embedding: 10, Layers: 2, InputFeed: true})},
		{name: "onmt-dot/lstm/if/L1/bridge/safetensors", format: "onmt-v3-safetensors", batch: 4, cfg: onmt(attention.Config{Arch: attention.OpenNMTDot, Cell: attention.LSTM, Hidden: 12, Embedding: 9, Layers: 1, InputFeed: true, Bridge: "relu-linear"})},
		{name: "joey-bahdanau/gru/if/bridge/Le1L2", format: "joey", batch: 4, cfg: bi(attention.Config{Arch: attention.JoeyBahdanau, Cell: attention.GRU, Hidden: 10, EncoderHidden: 7, Embedding: 8, TgtEmbedding: 6, Layers: 2, EncoderLayers: 1, InputFeed: true, Bridge: "bridge"})},
		{name: "joey-luong/lstm/noif/last/L2", format: "joey", batch: 4, cfg: bi(attention.Config{Arch: attention.JoeyLuong, Cell: attention.LSTM, Hidden: 12, EncoderHidden: 6, Embedding: 8, Layers: 2, Bridge: "last"})},
		{name: "joey-bahdanau/lstm/if/zero/L1", format: "joey", batch: 1, cfg: bi(attention.Config{Arch: attention.JoeyBahdanau, Cell: attention.LSTM, Hidden: 9, EncoderHidden: 5, Embedding: 7, Layers: 1, InputFeed: true, Bridge: "zero"})},
		{name: "joey-luong/gru/if/last-forward/scaled/L1", format: "joey", batch: 4, cfg: bi(attention.Config{Arch: attention.JoeyLuong, Cell: attention.GRU, Hidden: 8, Embedding: 6, Layers: 1, InputFeed: true, Bridge: "last", ScaleSrcEmbedding: true, ScaleTgtEmbedding: true})},
		{name: "bentrevett/2018", format: "bentrevett-2018", batch: 1, cfg: bi(attention.Config{Arch: attention.Bentrevett, Cell: attention.GRU, Hidden: 11, EncoderHidden: 7, Embedding: 6, TgtEmbedding: 5, Layers: 1})},
		{name: "bentrevett/2019", format: "bentrevett-2019", batch: 4, cfg: bi(attention.Config{Arch: attention.Bentrevett, Cell: attention.GRU, Hidden: 10, EncoderHidden: 8, Embedding: 6, Layers: 1})},
		{name: "bentrevett/2020", format: "bentrevett-2020", batch: 4, cfg: bi(attention.Config{Arch: attention.Bentrevett, Cell: attention.GRU, Hidden: 9, Embedding: 7, TgtEmbedding: 8, Layers: 1})},
		{name: "bentrevett/2023", format: "bentrevett-2023", batch: 4, cfg: bi(attention.Config{Arch: attention.Bentrevett, Cell: attention.GRU, Hidden: 12, EncoderHidden: 6, Embedding: 8, Layers: 1})},
		{name: "chatbot-dot/L2", format: "chatbot", batch: 4, cfg: bi(attention.Config{Arch: attention.ChatbotDot, Cell: attention.GRU, Hidden: 10, Embedding: 10, Layers: 2})},
		{name: "chatbot-general/L1-of-Le2", format: "chatbot", batch: 4, cfg: bi(attention.Config{Arch: attention.ChatbotGeneral, Cell: attention.GRU, Hidden: 9, Embedding: 9, Layers: 1, EncoderLayers: 2})},
		{name: "chatbot-concat/L2", format: "chatbot", batch: 1, cfg: bi(attention.Config{Arch: attention.ChatbotConcat, Cell: attention.GRU, Hidden: 8, Embedding: 8, Layers: 2})},
		{name: "fairseq-lstm/L1/unidirectional", format: "fairseq", batch: 4, cfg: fairseq(attention.Config{Arch: attention.FairseqLSTM, Hidden: 12, Embedding: 8, TgtEmbedding: 7, Layers: 1})},
		{name: "fairseq-lstm/L2/bi/proj/additional_fc", format: "fairseq", batch: 4, cfg: fairseq(attention.Config{Arch: attention.FairseqLSTM, Hidden: 10, EncoderHidden: 7, Embedding: 6, Layers: 2, Bidirectional: true, OutEmbedding: 6})},
		{name: "fairseq-lstm-noattn/L1/tied", format: "fairseq", batch: 1, cfg: fairseq(attention.Config{Arch: attention.FairseqLSTMNoAttention, Hidden: 10, Embedding: 9, TgtEmbedding: 8, Layers: 1, OutEmbedding: 8, TiedOutput: true})},
	}
}

// checkpoint is the file export reads for the case saved under the
// prefix.
func (c toolkitCase) checkpoint(prefix string) string {
	switch c.format {
	case "joey":
		return filepath.Join(prefix+"joey", "best.ckpt")
	case "fairseq":
		return filepath.Join(prefix+"fairseq", "checkpoint_best.pt")
	}
	return prefix + "ckpt.pt"
}

// chatbot models have one vocabulary: the target's size is the source's.
func (c toolkitCase) config() attention.Config {
	cfg := c.cfg
	if cfg.Arch.Toolkit() == "PyTorch chatbot tutorial" {
		cfg.TgtVocab = cfg.SrcVocab
	}
	return cfg
}

// TestToolkitLiveParity builds each toolkit model (toolkitCases) with the
// independent PyTorch reference, saves it as its toolkit saves it, exports
// it as attnx export does (reading the toolkit's own files: options,
// config.yaml, vocabularies) and compares: every output of every step
// step-isolated within the spec's tolerance, the per-step tokens, greedy
// decoding (decoder.onnx through the decoding core and greedy.onnx) and
// beam search (K=3, both engines), with the toolkit's decoding rules where
// it has them (JoeyNMT). PyTorch runs in two processes for all cases.
func TestToolkitLiveParity(t *testing.T) {
	requireTorch(t)
	testenv.ORT(t, onnxrun.Init())
	cases := toolkitCases()
	dir := t.TempDir()
	p := func(i int, name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
	infos := prepareLive(t, dir, cases, 300, modeldir.Options{Greedy: true, Beam: true}, func(i int, c toolkitCase, ids []string) [][]string {
		return [][]string{append([]string{"beam", "--checkpoint", p(i, "w.safetensors"), "--inputs", p(i, "in.safetensors"), "--beam", "3", "--max-len", fmt.Sprint(liveSteps), "--out", p(i, "beam.safetensors")}, ids...)}
	})

	var mu sync.Mutex
	table := make([]string, len(cases))
	t.Run("cases", func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
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
						par, err := CheckParity(enc, dec, ids, lens, stepIDs, ref)
						if err != nil {
							t.Fatal(err)
						}
						for _, f := range par.Failures() {
							t.Error(f)
						}
						refTokens, err := referenceGreedy(ref)
						if err != nil {
							t.Fatal(err)
						}
						sp := info.Special
						got, err := Greedy(enc, dec, ids, lens, sp.SOS, sp.EOS, liveSteps, info.Decoding)
						if err != nil {
							t.Fatal(err)
						}
						checks := []GreedyCheck{compareGreedy("decoder.onnx", got.Tokens, refTokens, par.Free)}
						loop := runGreedyGraph(t, filepath.Join(p(i, "model"), modeldir.GreedyFile), backend, ids, lens, sp.EOS, liveSteps)
						checks = append(checks, compareGreedy("greedy.onnx", loop, refTokens, par.Free))
						for _, g := range checks {
							if !g.Identical {
								t.Errorf("%s: %s", g.Graph, g.Detail)
							}
						}
						bd, err := checkpoint.LoadSafetensors(p(i, "beam.safetensors"))
						if err != nil {
							t.Fatal(err)
						}
						want, err := ReferenceBeam(bd.Tensors)
						if err != nil {
							t.Fatal(err)
						}
						b, err := Beam(enc, dec, ids, lens, sp.SOS, sp.EOS, 3, liveSteps, 1, info.Decoding)
						if err != nil {
							t.Fatal(err)
						}
						bc := CompareBeam("decoder.onnx", 3, 1, b.Hypotheses, b.NearestTie, par.Free.ScoreDrift(), want)
						if !bc.Identical {
							t.Errorf("beam search: %s", bc.Detail)
						}
						// Every architecture exports at reduced precision too, and its
						// graphs decode (random weights leave logits nearly tied, so
						// their tokens are not compared here: attnx verify measures
						// agreement on trained models).
						for _, w := range []quant.Precision{quant.PrecisionInt8, quant.PrecisionInt4} {
							dir := p(i, "model-"+string(w))
							ckpt := c.checkpoint(p(i, ""))
							if _, err := os.Stat(dir); err != nil { // exported once, for the first backend
								if _, err := modeldir.Export(ckpt, dir, modeldir.Options{Greedy: true, Beam: true, Weights: w}); err != nil {
									t.Fatalf("%s export: %v", w, err)
								}
							}
							for _, engine := range []string{translate.EngineSteps, translate.EngineLoop} {
								tr, err := translate.Open(dir, translate.Options{Backend: backend, Threads: 1, MaxLen: 6, Engine: engine, Beam: 2, NoModelDefaults: true})
								if err != nil {
									t.Fatalf("%s %s: %v", w, engine, err)
								}
								rows, _, err := sourceRows(ids, lens)
								if err != nil {
									t.Fatal(err)
								}
								res, err := tr.TranslateIDs(context.Background(), rows)
								tr.Close()
								if err != nil || len(res) != len(rows) || len(res[0].Tokens) == 0 {
									t.Fatalf("%s %s beam 2: %v (%d results)", w, engine, err, len(res))
								}
							}
						}
						ties := len(par.Isolated.NearTies) + len(par.Free.NearTies) + bc.Swaps
						for _, g := range checks {
							ties += len(g.NearTies)
						}
						mu.Lock()
						table[i] += fmt.Sprintf("| %s | %s | %s | %d | %s | %.1e | %v | %d |\n", c.name, c.format, backend, c.batch, formatMaxAbs(par.Isolated.MaxAbs),
							par.Free.MaxAbs["log_probs"], !t.Failed(), ties)
						mu.Unlock()
					})
				}
			})
		}
	})
	t.Logf("toolkit parity table (step-isolated max abs error per output; free-running log_probs drift at the worst step; tokens: per-step argmax, greedy with decoder.onnx and greedy.onnx, beam K=3 all equal PyTorch's up to the near ties counted):\n"+
		"| model | saved as | backend | batch | step-isolated max abs err | free-running log_probs drift | tokens identical | near ties |\n|---|---|---|---|---|---|---|---|\n%s", strings.TrimSuffix(strings.Join(table, ""), "\n"))
}

// prepareLive builds each case with the PyTorch reference (make-toolkit
// in dir, seeds from seed), exports it as attnx export does with opt
// (checking the configuration), hands the reference the weights with
// attnx.json's configuration as attnx verify does, and runs the reference
// on random inputs (run --rounding) and on the jobs more gives each case
// (with the special ids' flags): what the live suites compare with. It
// returns each case's attnx.json.
func prepareLive(t *testing.T, dir string, cases []toolkitCase, seed int, opt modeldir.Options, more func(i int, c toolkitCase, ids []string) [][]string) []*modeldir.Info {
	t.Helper()
	p := func(i int, name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
	var jobs [][]string
	for i, c := range cases {
		js, err := json.Marshal(c.config())
		if err != nil {
			t.Fatal(err)
		}
		out := p(i, "ckpt.pt")
		if c.format == "joey" || c.format == "fairseq" {
			out = p(i, c.format)
		}
		jobs = append(jobs, []string{"make-toolkit", "--config", string(js), "--format", c.format, "--seed", fmt.Sprint(seed + i), "--out", out})
	}
	runReferenceJobs(t, dir, jobs)
	infos := make([]*modeldir.Info, len(cases))
	jobs = nil
	for i, c := range cases {
		ckpt := c.checkpoint(p(i, ""))
		res, err := modeldir.Export(ckpt, p(i, "model"), opt)
		if err != nil {
			t.Fatalf("%s: export: %v", c.name, err)
		}
		if want := c.config(); res.Config != want {
			t.Fatalf("%s: exported as %v, want %v", c.name, res.Config, want)
		}
		info, err := modeldir.ReadInfo(filepath.Join(p(i, "model"), modeldir.InfoFile))
		if err != nil {
			t.Fatal(err)
		}
		infos[i] = info
		read, err := modeldir.ReadModel(checkpoint.Files{Path: ckpt}, modeldir.ReadOptions{Config: &info.Config})
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(info.Config)
		if err := checkpoint.WriteSafetensors(p(i, "w.safetensors"), read.StateDict.Tensors, map[string]string{modeldir.ConfigMetadata: string(js)}); err != nil {
			t.Fatal(err)
		}
		sp := info.Special
		in := []string{"random-inputs", "--batch", fmt.Sprint(c.batch), "--src-len", fmt.Sprint(liveSrcLen), "--src-vocab", fmt.Sprint(c.cfg.SrcVocab),
			"--seed", fmt.Sprint(seed + i), "--out", p(i, "in.safetensors")}
		if c.batch > 1 {
			in = append(in, "--ragged")
		}
		ids := []string{"--sos", fmt.Sprint(sp.SOS), "--eos", fmt.Sprint(sp.EOS), "--pad", fmt.Sprint(sp.PAD), "--rules", rulesArg(info.Decoding)}
		jobs = append(jobs, in,
			append([]string{"run", "--checkpoint", p(i, "w.safetensors"), "--inputs", p(i, "in.safetensors"), "--steps", fmt.Sprint(liveSteps), "--rounding", "--out", p(i, "out.safetensors")}, ids...))
		if more != nil {
			jobs = append(jobs, more(i, c, ids)...)
		}
	}
	runReferenceJobs(t, dir, jobs)
	return infos
}

// runGreedyGraph runs greedy.onnx on the batch and returns each row's
// tokens up to its EOS.
func runGreedyGraph(t *testing.T, path, backend string, ids *onnxrun.Tensor, lens []int64, eos int64, maxLen int) [][]int64 {
	t.Helper()
	s, err := onnxrun.Open(path, onnxrun.Options{Backend: backend, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	B := int64(len(lens))
	out, err := s.Run(map[string]*onnxrun.Tensor{
		attention.InSourceIDs:     ids,
		attention.InSourceLengths: onnxrun.NewInt64([]int64{B}, lens),
		attention.InMaxLen:        onnxrun.Scalar(int64(maxLen)),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out[attention.OutOutputIDs].Int64s()
	T := out[attention.OutOutputIDs].Shape[1]
	rows := make([][]int64, B)
	for b := range B {
		row := got[b*T : (b+1)*T]
		for j, tok := range row {
			if tok == eos {
				row = row[:j+1]
				break
			}
		}
		rows[b] = row
	}
	return rows
}
