package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/verify"
)

// writeInputs writes a verify inputs file (verify.WriteInputs).
func writeInputs(t *testing.T, path string, rows [][]int64) {
	t.Helper()
	if err := verify.WriteInputs(path, rows); err != nil {
		t.Fatal(err)
	}
}

// attnx verify works for every architecture with every cell: a model
// exported from a checkpoint of each (E != H for some, two layers for
// some) matches PyTorch at every step, and its greedy decoding with
// decoder.onnx and greedy.onnx equals PyTorch's, with the architecture's
// special tokens (the tutorial's SOS 0, EOS 1 for the tutorial's models).
func TestVerifyEveryArchitecture(t *testing.T) {
	needTorch(t)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "in.safetensors")
	writeInputs(t, in, [][]int64{{4, 5, 6, 7, 8}, {9, 4}, {5, 5, 6}})
	for i, a := range attention.StateDictArchs {
		for j, cell := range attention.Cells {
			if a.IsTutorial() && cell == attention.LSTM {
				continue // the tutorial's modules are GRU only
			}
			cfg := attention.Config{Arch: a, Cell: cell, Hidden: 7 + 2*j, Embedding: 5 + i, Layers: 1 + (i+j)%2, SrcVocab: 11, TgtVocab: 13}
			if a == attention.TutorialLocation {
				cfg.MaxLength = 6
			}
			t.Run(string(a)+"/"+string(cell), func(t *testing.T) {
				ckpt := filepath.Join(tmp, fmt.Sprintf("%s-%s.safetensors", a, cell))
				fixtures.WriteRandomCheckpoint(t, ckpt, cfg, int64(10*i+j))
				dir := filepath.Join(tmp, string(a)+"-"+string(cell))
				if code, _, errs := attnx("export", ckpt, "-o", dir, "--greedy"); code != 0 {
					t.Fatal(errs)
				}
				code, out, errs := attnx("verify", "--json", "--model", dir, "--checkpoint", ckpt, "--inputs", in, "--steps", "6")
				var o struct {
					OK                  bool
					Config              attention.Config
					StepTokensIdentical bool `json:"step_tokens_identical"`
					Outputs             []struct{ Output string }
					Greedy              []struct {
						Graph     string
						Identical bool
					}
				}
				if err := json.Unmarshal([]byte(out), &o); err != nil || code != 0 {
					t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
				}
				var outputs, graphs []string
				for _, s := range o.Outputs {
					outputs = append(outputs, s.Output)
				}
				for _, g := range o.Greedy {
					graphs = append(graphs, fmt.Sprintf("%s %v", g.Graph, g.Identical))
				}
				wantOut := "encoder_outputs hidden cell log_probs next_hidden next_cell attention"
				if cell == attention.GRU {
					wantOut = "encoder_outputs hidden log_probs next_hidden attention"
				}
				if !o.OK || !o.StepTokensIdentical || o.Config != cfg || strings.Join(outputs, " ") != wantOut ||
					strings.Join(graphs, ", ") != "decoder.onnx (step by step) true, greedy.onnx true" {
					t.Errorf("outcome %+v\n%s", o, out)
				}
			})
		}
	}
}

// attnx verify refuses inputs longer than a tutorial-location model's
// max_length before starting PyTorch, and reads the checkpoint as export
// does: keys that fit nothing get the diagnosis, --map fixes them.
func TestVerifyRefusals(t *testing.T) {
	needTorch(t)
	tmp := t.TempDir()
	ckpt := filepath.Join(tmp, "tl.safetensors")
	fixtures.WriteRandomCheckpoint(t, ckpt, attention.Config{Arch: attention.TutorialLocation, Cell: attention.GRU, Hidden: 5, Layers: 1,
		SrcVocab: 9, TgtVocab: 8, MaxLength: 4}, 3)
	dir := filepath.Join(tmp, "tl")
	if code, _, errs := attnx("export", ckpt, "-o", dir); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs := attnx("verify", "--model", dir, "--checkpoint", ckpt, "--src-len", "5")
	want := "attnx verify: inputs of src_len 5: source of 5 tokens is longer than the model's max_length 4 (a tutorial-location decoder attends over 4 positions only)\n"
	if code != 1 || errs != want {
		t.Errorf("--src-len 5: exit %d, stderr %q, want %q", code, errs, want)
	}

	maps := []string{"--map", "decoder.attention.W1=decoder.attention.Wa", "--map", "decoder.attention.W2=decoder.attention.Ua", "--map", "decoder.attention.V=decoder.attention.Va"}
	pair := []string{"--encoder", layoutFixture("tut_encoder.pt"), "--decoder", layoutFixture("tut_decoder_w1w2v.pt")}
	tut := filepath.Join(tmp, "tut")
	if code, _, errs := attnx(append(append([]string{"export", "-o", tut, "--greedy"}, pair...), maps...)...); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs = attnx(append([]string{"verify", "--model", tut}, pair...)...)
	if code != 1 || !strings.Contains(errs, "\nclosest known layout: tutorial-bahdanau/gru (12 keys fit as named, 6 under other names)\n") {
		t.Errorf("without --map: exit %d, stderr\n%s", code, errs)
	}
	code, out, errs := attnx(append(append([]string{"verify", "--model", tut, "--batch", "2", "--src-len", "4", "--steps", "4"}, pair...), maps...)...)
	if code != 0 || !strings.Contains(out, "\nOK: the ONNX graphs compute what PyTorch computes\n") {
		t.Errorf("with --map: exit %d\n%s\n%s", code, out, errs)
	}
}
