package checkpoint

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/moses"
	"github.com/attnx/attnx/subword"
)

// gnmtTensors lists the state_dict GNMT's modules have for a shape
// (seq2seq/models/encoder.py, decoder.py, attention.py): the encoder's
// bidirectional first layer, its second taking 2H, the decoder's
// attention LSTM and BahdanauAttention(normalize=True), its later layers
// taking H plus the context, the classifier, and the embeddings (one
// shared tensor written under both names when shared).
func gnmtTensors(h, layers, vocab int) map[string][]int64 {
	H, V := int64(h), int64(vocab)
	out := map[string][]int64{}
	lstm := func(prefix, suffix string, in int64) {
		out[prefix+"weight_ih_l0"+suffix] = []int64{4 * H, in}
		out[prefix+"weight_hh_l0"+suffix] = []int64{4 * H, H}
		out[prefix+"bias_ih_l0"+suffix] = []int64{4 * H}
		out[prefix+"bias_hh_l0"+suffix] = []int64{4 * H}
	}
	lstm("encoder.rnn_layers.0.", "", H)
	lstm("encoder.rnn_layers.0.", "_reverse", H)
	lstm("encoder.rnn_layers.1.", "", 2*H)
	for i := 2; i < layers; i++ {
		lstm(fmt.Sprintf("encoder.rnn_layers.%d.", i), "", H)
	}
	lstm("decoder.att_rnn.rnn.", "", H)
	for i := 0; i < layers-1; i++ {
		lstm(fmt.Sprintf("decoder.rnn_layers.%d.", i), "", 2*H)
	}
	out["decoder.att_rnn.attn.linear_att"] = []int64{H}
	out["decoder.att_rnn.attn.normalize_scalar"] = []int64{1}
	out["decoder.att_rnn.attn.normalize_bias"] = []int64{H}
	out["decoder.att_rnn.attn.linear_q.weight"] = []int64{H, H}
	out["decoder.att_rnn.attn.linear_k.weight"] = []int64{H, H}
	out["encoder.embedder.weight"] = []int64{V, H}
	out["decoder.embedder.weight"] = []int64{V, H}
	out["decoder.classifier.classifier.weight"] = []int64{V, H}
	out["decoder.classifier.classifier.bias"] = []int64{V}
	return out
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestReadGNMT(t *testing.T) {
	for _, c := range []struct {
		dir          string
		variant      string
		hidden       int
		layers       int
		shared       bool
		modelVocab   int // model_config's vocab_size (0: none)
		math         string
		vocab        int // tokens, padding included
		pad          int // madeupwordNNNN tokens at the end
		src, tgt     string
		merges       int
		unknownsSeen bool
	}{
		{dir: "gnmt-dle", variant: GNMTDeepLearningExamples, hidden: 32, layers: 4, shared: true, modelVocab: 864, math: "tf32",
			vocab: 864, pad: 6, src: "en", tgt: "de", merges: 600},
		{dir: "gnmt-mlperf", variant: GNMTMLPerf, hidden: 32, layers: 3, shared: false, math: "fp32",
			vocab: 858, pad: 0},
	} {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "toolkits", c.dir)
			path := filepath.Join(dir, "model_best.pth")
			sd, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if sd.Origin == nil || sd.Origin.Toolkit != ToolkitGNMT {
				t.Fatalf("origin %+v, want toolkit %q", sd.Origin, ToolkitGNMT)
			}
			g, err := ReadGNMT(sd.Origin, path)
			if err != nil {
				t.Fatal(err)
			}
			if g.Variant != c.variant || g.HiddenSize != c.hidden || g.NumLayers != c.layers || g.ShareEmbedding != c.shared ||
				g.ModelVocabSize != c.modelVocab || g.Math != c.math || g.BatchFirst || g.Dropout != 0.1 {
				t.Errorf("got variant %q hidden %d layers %d shared %v model vocab %d math %q batch_first %v dropout %v",
					g.Variant, g.HiddenSize, g.NumLayers, g.ShareEmbedding, g.ModelVocabSize, g.Math, g.BatchFirst, g.Dropout)
			}
			if g.Config["beam_size"] != int64(5) || g.Config["len_norm_factor"] != 0.6 || g.Config["cov_penalty_factor"] != 0.1 || g.Config["len_norm_const"] != 5.0 {
				t.Errorf("config's search settings: beam %v len_norm_factor %v cov_penalty_factor %v len_norm_const %v",
					g.Config["beam_size"], g.Config["len_norm_factor"], g.Config["cov_penalty_factor"], g.Config["len_norm_const"])
			}
			tok := g.Tokenizer
			if tok.Separator != "@@" || tok.Unk != GNMTUnk || tok.SrcLang != c.src || tok.TgtLang != c.tgt {
				t.Errorf("tokenizer separator %q unk %d langs %q %q", tok.Separator, tok.Unk, tok.SrcLang, tok.TgtLang)
			}
			// The vocabulary: specials, the vocabulary file's lines, padding.
			words := readLines(t, filepath.Join(dir, "vocab.bpe"))
			if len(tok.Vocab) != c.vocab || len(words)+4+c.pad != c.vocab {
				t.Fatalf("%d tokens, vocab.bpe %d lines, want %d tokens with %d padding", len(tok.Vocab), len(words), c.vocab, c.pad)
			}
			want := append([]string{"<pad>", "<unk>", "<s>", `<\s>`}, words...)
			for i := 0; i < c.pad; i++ {
				want = append(want, fmt.Sprintf("madeupword%04d", i))
			}
			if !reflect.DeepEqual(tok.Vocab, want) {
				for i := range want {
					if tok.Vocab[i] != want[i] {
						t.Fatalf("token %d is %q, want %q", i, tok.Vocab[i], want[i])
					}
				}
			}
			if c.variant == GNMTMLPerf {
				if tok.BPE != nil {
					t.Errorf("MLPerf's tokenizer has no BPE, got %d merges", len(tok.BPE.Merges))
				}
			} else {
				codes, err := os.ReadFile(filepath.Join(dir, "bpe.codes"))
				if err != nil {
					t.Fatal(err)
				}
				b := tok.BPE
				if b == nil || len(b.Merges) != c.merges || b.Separator != "@@" || !reflect.DeepEqual(b.Version, []int{0, 2}) || b.HasVocab || len(b.Glossaries) != 0 {
					t.Fatalf("bpe %+v", b)
				}
				// The pickled object's codes are the codes file learn_bpe.py wrote.
				if got := b.Codes(); !bytes.Equal(got, codes) {
					t.Errorf("Codes() differs from bpe.codes: %d bytes, want %d", len(got), len(codes))
				}
			}
			// The tensors, by name and shape.
			wantT := gnmtTensors(c.hidden, c.layers, c.vocab)
			if len(sd.Keys) != len(wantT) {
				t.Errorf("%d tensors, want %d: %v", len(sd.Keys), len(wantT), sd.Keys)
			}
			for name, dims := range wantT {
				tt, ok := sd.Tensors[name]
				if !ok {
					t.Errorf("no tensor %s", name)
					continue
				}
				if !reflect.DeepEqual(tt.Dims, dims) {
					t.Errorf("%s: dims %v, want %v", name, tt.Dims, dims)
				}
			}
			// Shared embeddings are one storage.
			e, d := sd.Views["encoder.embedder.weight"], sd.Views["decoder.embedder.weight"]
			if (e == d) != c.shared {
				t.Errorf("embedding views %+v and %+v, shared %v", e, d, c.shared)
			}
		})
	}
}

// TestReadGNMTRefuses: a checkpoint whose entries are not what train.py
// writes is refused, naming the entry and what was expected.
func TestReadGNMTRefuses(t *testing.T) {
	path := filepath.Join("..", "testdata", "toolkits", "gnmt-dle", "model_best.pth")
	sd, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	clone := func() *Origin {
		o := &Origin{Toolkit: ToolkitGNMT, Entries: map[string]any{}}
		for k, v := range sd.Origin.Entries {
			o.Entries[k] = v
		}
		mc := map[string]any{}
		for k, v := range sd.Origin.Entries["model_config"].(map[string]any) {
			mc[k] = v
		}
		o.Entries["model_config"] = mc
		tok := map[string]any{}
		for k, v := range sd.Origin.Entries["tokenizer"].(map[string]any) {
			tok[k] = v
		}
		o.Entries["tokenizer"] = tok
		return o
	}
	tokOf := func(o *Origin) map[string]any { return o.Entries["tokenizer"].(map[string]any) }
	mcOf := func(o *Origin) map[string]any { return o.Entries["model_config"].(map[string]any) }
	for _, c := range []struct {
		name   string
		change func(o *Origin)
		want   string
	}{
		{"no model_config", func(o *Origin) { delete(o.Entries, "model_config") }, "model_config is missing, want a dict"},
		{"one layer", func(o *Origin) { mcOf(o)["num_layers"] = int64(1) }, "num_layers 1, want hidden_size >= 1 and num_layers >= 2"},
		{"hidden size a string", func(o *Origin) { mcOf(o)["hidden_size"] = "32" }, `hidden_size is the string "32", want a non-negative int`},
		{"vocab_size disagrees", func(o *Origin) { mcOf(o)["vocab_size"] = int64(100) }, "model_config's vocab_size is 100 but the tokenizer has 864 tokens"},
		{"no tokenizer", func(o *Origin) { delete(o.Entries, "tokenizer") }, "tokenizer is missing, want the Tokenizer's state"},
		{"short idx2tok", func(o *Origin) { tokOf(o)["vocab_size"] = int64(865) }, "idx2tok has 864 entries but vocab_size is 865"},
		{"tok2idx a dict", func(o *Origin) { tokOf(o)["tok2idx"] = map[string]any{} }, "tok2idx is a dict, want a collections.defaultdict"},
		{"bpe without lang", func(o *Origin) { delete(tokOf(o), "lang") }, "lang or bpe but not both"},
		{"bpe not a BPE", func(o *Origin) { tokOf(o)["bpe"] = "codes" }, `bpe is the string "codes", want a subword_nmt.apply_bpe.BPE object`},
		{"not GNMT", func(o *Origin) { o.Toolkit = ToolkitFairseq }, "not a GNMT checkpoint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := clone()
			c.change(o)
			_, err := ReadGNMT(o, path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and saying %q", err, path, c.want)
			}
		})
	}
	// The unmodified clone reads.
	if _, err := ReadGNMT(clone(), path); err != nil {
		t.Fatal(err)
	}
}

// TestGNMTTokenizerPath: the checkpoint's Tokenizer state read here, with
// package moses and package subword, segments the held-out test set as
// DeepLearningExamples' own Tokenizer (restored from the same checkpoint)
// does, and detokenizes the ids as its detokenize does
// (expected/segments.tsv, by gnmt_segments.py).
func TestGNMTTokenizerPath(t *testing.T) {
	dir := filepath.Join("..", "testdata", "toolkits", "gnmt-dle")
	path := filepath.Join(dir, "model_best.pth")
	sd, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ReadGNMT(sd.Origin, path)
	if err != nil {
		t.Fatal(err)
	}
	tok := g.Tokenizer
	bpe, err := subword.ParseBPE(tok.BPE.Codes(), subword.BPEOptions{Separator: tok.BPE.Separator})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for i, s := range tok.Vocab {
		ids[s] = i
	}
	mt, md := moses.NewTokenizer(tok.SrcLang), moses.NewDetokenizer(tok.TgtLang)
	raw := readLines(t, filepath.Join(dir, "test.raw.en"))
	want := readLines(t, filepath.Join(dir, "expected", "segments.tsv"))
	if len(raw) != len(want) || len(raw) < 30 {
		t.Fatalf("%d lines, %d segmented", len(raw), len(want))
	}
	unk := 0
	for i, line := range raw {
		cols := strings.Split(want[i], "\t")
		pieces := bpe.Encode(mt.Tokenize(line))
		if got := strings.Join(pieces, " "); got != cols[0] {
			t.Errorf("line %d: segmented\n%q, want\n%q", i+1, got, cols[0])
			continue
		}
		seq := []string{fmt.Sprint(GNMTBOS)}
		var toks []string
		for _, p := range pieces {
			id, ok := ids[p]
			if !ok {
				id = tok.Unk
				unk++
			}
			seq = append(seq, fmt.Sprint(id))
			toks = append(toks, tok.Vocab[id])
		}
		seq = append(seq, fmt.Sprint(GNMTEOS))
		if got := strings.Join(seq, " "); got != cols[1] {
			t.Errorf("line %d: ids %s, want %s", i+1, got, cols[1])
		}
		// detokenize_bpe: the tokens joined (BOS and EOS among them),
		// "@@ " then "@@" removed, the specials removed, stripped; then
		// Moses detokenization of the space-split text.
		s := strings.Join(append(append([]string{tok.Vocab[GNMTBOS]}, toks...), tok.Vocab[GNMTEOS]), " ")
		s = strings.ReplaceAll(s, tok.Separator+" ", "")
		s = strings.ReplaceAll(s, tok.Separator, "")
		for _, sp := range []int{GNMTBOS, GNMTEOS, GNMTPad} {
			s = strings.ReplaceAll(s, tok.Vocab[sp], "")
		}
		if got := md.Detokenize(strings.Fields(s)); got != cols[2] {
			t.Errorf("line %d: detokenized %q, want %q", i+1, got, cols[2])
		}
	}
	if unk == 0 {
		t.Log("no token of the test set fell outside the vocabulary")
	}
}
