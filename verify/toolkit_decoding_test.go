package verify

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/attnx/attnx/internal/testenv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// referenceRecord is where reference.py make-toolkit records the model it
// saved at out (reference_stem).
func referenceRecord(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + "_reference.json"
}

// TestToolkitDecodingConventions translates raw text with attnx (export
// with no flags, translate.Open, text in) and compares with each toolkit's
// own way of decoding one sentence, written in the reference
// (reference.py toolkit-decode): OpenNMT-py's bare source from <s> to
// </s>; JoeyNMT's </s>-terminated source and its version's bans (2.3: <s>
// and <pad> never chosen, and from 2.0 no </s> at the first step; 1.x
// plain argmax); bentrevett's <sos> ... <eos> source; the chatbot's
// EOS-terminated source and its run cut at EOS. Both engines (decoder.onnx
// step by step and greedy.onnx) must give the toolkit's tokens.
func TestToolkitDecodingConventions(t *testing.T) {
	requireTorch(t)
	testenv.ORT(t, onnxrun.Init())
	type tcase struct {
		name, format, joey string
		cfg                attention.Config
		std                string // of the random weights: one that makes outputs differ between sentences
	}
	cfg := func(a attention.Arch, cell attention.Cell, feed bool, bridge string) attention.Config {
		return attention.Config{Arch: a, Cell: cell, Hidden: 12, EncoderHidden: 6, Embedding: 8, Layers: 1, SrcVocab: 30, TgtVocab: 30,
			Bidirectional: true, InputFeed: feed, Bridge: bridge}
	}
	cases := []tcase{
		{name: "opennmt-py", format: "onmt-v3", cfg: cfg(attention.OpenNMTGeneral, attention.LSTM, true, "")},
		{name: "joeynmt-2.3", format: "joey", joey: "2.3.0", cfg: cfg(attention.JoeyBahdanau, attention.GRU, true, "bridge")},
		{name: "joeynmt-2.1", format: "joey", joey: "2.1.0", cfg: cfg(attention.JoeyLuong, attention.LSTM, true, "bridge"), std: "1.0"},
		{name: "joeynmt-1.x", format: "joey", joey: "", cfg: cfg(attention.JoeyBahdanau, attention.GRU, false, "zero"), std: "1.0"},
		{name: "bentrevett", format: "bentrevett-2020", cfg: cfg(attention.Bentrevett, attention.GRU, false, "")},
		{name: "chatbot", format: "chatbot", cfg: attention.Config{Arch: attention.ChatbotGeneral, Cell: attention.GRU, Hidden: 12, Embedding: 12, Layers: 2, SrcVocab: 30, TgtVocab: 30, Bidirectional: true}},
	}
	texts := []string{"w1 w2 w3", "w7 w3 w9 w11 w4", "w20 w5", "w8 w8 w12 w13 w14 w15 w2", "w0"}
	const maxLen = 15
	dir := t.TempDir()
	p := func(i int, name string) string { return filepath.Join(dir, fmt.Sprintf("%02d-%s", i, name)) }
	textJSON, _ := json.Marshal(texts)
	var jobs [][]string
	for i, c := range cases {
		js, _ := json.Marshal(c.cfg)
		out := p(i, "ckpt.pt")
		if c.format == "joey" {
			out = p(i, "joey")
		}
		jobs = append(jobs,
			[]string{"make-toolkit", "--config", string(js), "--format", c.format, "--seed", fmt.Sprint(500 + i), "--std", cmp.Or(c.std, "0.3"), "--joey-version", c.joey, "--out", out},
			[]string{"toolkit-decode", "--model", referenceRecord(out), "--texts", string(textJSON), "--max-len", fmt.Sprint(maxLen), "--out", p(i, "want.json")})
	}
	runReferenceJobs(t, dir, jobs)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ckpt := p(i, "ckpt.pt")
			if c.format == "joey" {
				ckpt = filepath.Join(p(i, "joey"), "best.ckpt")
			}
			opt := modeldir.Options{Greedy: true}
			if c.format == "bentrevett-2020" {
				// The tutorial's vocabularies are torchtext objects outside the
				// checkpoint: the user passes them.
				var side struct {
					Src []string `json:"src_vocab"`
					Tgt []string `json:"tgt_vocab"`
				}
				data, err := os.ReadFile(referenceRecord(p(i, "ckpt.pt")))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(data, &side); err != nil {
					t.Fatal(err)
				}
				for _, v := range []struct {
					toks []string
					dst  *string
					name string
				}{{side.Src, &opt.SrcVocab, "src.json"}, {side.Tgt, &opt.TgtVocab, "tgt.json"}} {
					js, _ := json.Marshal(v.toks)
					*v.dst = p(i, v.name)
					if err := os.WriteFile(*v.dst, js, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := modeldir.Export(ckpt, p(i, "model"), opt); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(p(i, "want.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want [][]int64
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			// The comparison means something only if the toolkit's outputs
			// differ from sentence to sentence.
			distinct := map[string]bool{}
			for _, w := range want {
				distinct[fmt.Sprint(w)] = true
			}
			if len(distinct) < 3 {
				t.Fatalf("the toolkit's decoding gives %d distinct outputs for %d sentences (%v): the model cannot tell a wrong convention from a right one", len(distinct), len(texts), want)
			}
			t.Logf("the toolkit's outputs: %v", want)
			for _, engine := range []string{translate.EngineSteps, translate.EngineLoop} {
				tr, err := translate.Open(p(i, "model"), translate.Options{Threads: 1, MaxLen: maxLen, Engine: engine, NoModelDefaults: true})
				if err != nil {
					t.Fatal(err)
				}
				res, err := tr.Translate(context.Background(), texts)
				tr.Close()
				if err != nil {
					t.Fatal(err)
				}
				for r := range texts {
					if !slices.Equal(res[r].Tokens, want[r]) {
						t.Errorf("%s, %q: attnx %v, the toolkit's decoding %v", engine, texts[r], res[r].Tokens, want[r])
					}
				}
			}
		})
	}
}
