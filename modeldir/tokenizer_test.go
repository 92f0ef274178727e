package modeldir

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/subword"
)

const spmFixture = "../subword/testdata/unigram.model"

// spmVocab is a vocabulary of n tokens: the specials, then SentencePiece
// pieces of the fixture model.
func spmVocab(t *testing.T, n int, specials ...string) []string {
	sp, err := subword.LoadSentencePiece(spmFixture)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]string(nil), specials...)
	for id := 3; len(out) < n; id++ {
		out = append(out, sp.Piece(id))
	}
	return out
}

func TestExportTokenizers(t *testing.T) {
	tmp := t.TempDir()
	src := writeVocab(t, tmp, "src.json", spmVocab(t, 19, "<pad>", "<unk>"))
	tgt := writeVocab(t, tmp, "tgt.json", spmVocab(t, 23, "<pad>", "<sos>", "<eos>", "<unk>"))
	codes := filepath.Join(tmp, "codes")
	os.WriteFile(codes, []byte("#version: 0.2\nt h\nth e</w>\n"), 0o644)
	dir := filepath.Join(tmp, "m")

	// one file for both sides is copied once
	spec := &subword.Spec{Kind: subword.KindSentencePiece, File: spmFixture}
	res := mustExport(t, ckpt("bahdanau_b4_l2", "checkpoint.pt"), dir, Options{SrcVocab: src, TgtVocab: tgt, SrcTokenizer: spec, TgtTokenizer: spec})
	info, err := ReadInfo(filepath.Join(dir, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.SrcTokenizer == nil || info.SrcTokenizer.File != "sentencepiece.model" || !reflect.DeepEqual(info.TgtTokenizer, info.SrcTokenizer) {
		t.Fatalf("attnx.json tokenizers %+v %+v", info.SrcTokenizer, info.TgtTokenizer)
	}
	want, _ := os.ReadFile(spmFixture)
	if got, err := os.ReadFile(filepath.Join(dir, "sentencepiece.model")); err != nil || string(got) != string(want) {
		t.Fatalf("copied model: %v (%d bytes, want %d)", err, len(got), len(want))
	}
	if len(res.Files) != 4 || res.Files[2].Name != "sentencepiece.model" || res.Files[2].Role != "tokenizer" {
		t.Errorf("files %+v", res.Files)
	}
	srcTok, tgtTok, err := info.Tokenizers(dir)
	if err != nil || srcTok == nil || tgtTok == nil {
		t.Fatalf("Tokenizers: %v", err)
	}

	// a different tokenizer per side, one of them BPE; the old model's
	// file goes with --force
	bpeVocab := writeVocab(t, tmp, "bpe.json", append([]string{"<pad>", "<sos>", "<eos>", "<unk>", "the", "th@@", "e", "t@@", "h@@"}, strings.Split("abcdfgijklmnop", "")...))
	mustExport(t, ckpt("bahdanau_b4_l2", "checkpoint.pt"), dir, Options{SrcVocab: src, TgtVocab: bpeVocab, SrcTokenizer: spec,
		TgtTokenizer: &subword.Spec{Kind: subword.KindSubwordNMT, File: codes}, Force: true})
	if got := entries(t, dir); strings.Join(got, " ") != "attnx.json decoder.onnx encoder.onnx source.model target.codes" {
		t.Errorf("directory holds %v", got)
	}
	info, _ = ReadInfo(filepath.Join(dir, InfoFile))
	if info.TgtTokenizer.Kind != subword.KindSubwordNMT || info.TgtTokenizer.File != "target.codes" {
		t.Errorf("tgt_tokenizer %+v", info.TgtTokenizer)
	}

	// the Moses pretokenizer and its language are recorded and applied
	moses := &subword.Spec{Kind: subword.KindSentencePiece, File: spmFixture, Pretokenizer: subword.PretokenizeMoses, Lang: "de"}
	mustExport(t, ckpt("bahdanau_b4_l2", "checkpoint.pt"), dir, Options{SrcVocab: src, TgtVocab: tgt, SrcTokenizer: moses, Force: true})
	info, _ = ReadInfo(filepath.Join(dir, InfoFile))
	if info.SrcTokenizer.Pretokenizer != "moses" || info.SrcTokenizer.Lang != "de" {
		t.Errorf("src_tokenizer %+v", info.SrcTokenizer)
	}
	tok, _, err := info.Tokenizers(dir)
	if err != nil || !strings.Contains(subword.Describe(tok), "Moses tokenizer (de, escaped)") {
		t.Errorf("Tokenizers: %v %v", err, tok)
	}
}

func TestExportTokenizerErrors(t *testing.T) {
	tmp := t.TempDir()
	fits := writeVocab(t, tmp, "src.json", spmVocab(t, 19, "<pad>", "<unk>"))
	misfit := writeVocab(t, tmp, "misfit.json", vocab(19, "<pad>", "<unk>"))
	spec := &subword.Spec{Kind: subword.KindSentencePiece, File: spmFixture}
	notModel := filepath.Join(tmp, "vocab.model")
	os.WriteFile(notModel, []byte("<unk>\t0\n<s>\t0\n"), 0o644)
	for _, c := range []struct {
		name string
		opt  Options
		want string
	}{
		{"misfit", Options{SrcVocab: misfit, SrcTokenizer: spec}, "does not fit the source vocabulary: 16 of its 16 tokens are not pieces this tokenizer produces"},
		{"no vocabulary", Options{SrcTokenizer: spec}, "the model has no source vocabulary to map its pieces to; pass --src-vocab too"},
		{"not a model", Options{SrcVocab: fits, SrcTokenizer: &subword.Spec{Kind: subword.KindSentencePiece, File: notModel}}, "vocab.model: not a SentencePiece model file"},
		{"missing", Options{SrcVocab: fits, SrcTokenizer: &subword.Spec{Kind: subword.KindSentencePiece, File: filepath.Join(tmp, "nope.model")}}, "no such file"},
	} {
		dir := filepath.Join(tmp, c.name)
		_, err := Export(ckpt("bahdanau_b4_l2", "checkpoint.pt"), dir, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		if _, statErr := os.Stat(dir); statErr == nil {
			t.Errorf("%s: %s was written", c.name, dir)
		}
	}
}

func TestParseInfoChecksTokenizers(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{`{"kind":"wordpiece","file":"x.model"}`, `src_tokenizer: kind "wordpiece"`},
		{`{"kind":"sentencepiece","file":"../x.model"}`, `must be a plain file name`},
		{`{"kind":"subword-nmt","file":"codes","pretokenizer":"spacy"}`, `pretokenizer "spacy": want none or moses`},
		{`{"kind":"sentencepiece","file":"x.model","lang":"de"}`, `lang "de" goes with the moses pretokenizer`},
	} {
		data := strings.Replace(validInfoJSON, `"files"`, `"src_tokenizer": `+c.spec+`, "files"`, 1)
		if _, err := ParseInfo([]byte(data), "attnx.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.spec, err, c.want)
		}
	}
}

func TestConfigTokenizers(t *testing.T) {
	flag := &subword.Spec{Kind: subword.KindSentencePiece, File: "given.model"}
	opt := Options{TgtTokenizer: flag}
	notes := configTokenizers(&opt, [2]*checkpoint.TokenizerRef{
		{Kind: "sentencepiece", Option: "opt.src_subword_model", Named: "data/sp.model", Tried: []string{"data/sp.model", "/m/sp.model"}},
		{Kind: "sentencepiece", Option: "opt.tgt_subword_model", Named: "t.model", Path: "/m/t.model"},
	})
	if opt.SrcTokenizer != nil || opt.TgtTokenizer != flag {
		t.Errorf("src %+v tgt %+v: the flag must win and a missing file must not be recorded", opt.SrcTokenizer, opt.TgtTokenizer)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `opt.src_subword_model names sentencepiece "data/sp.model", which is not at data/sp.model, /m/sp.model: pass --src-tokenizer FILE`) {
		t.Errorf("notes %q", notes)
	}
	opt = Options{}
	notes = configTokenizers(&opt, [2]*checkpoint.TokenizerRef{
		{Kind: "subword-nmt", Option: "data.src.tokenizer_cfg.codes", Named: "codes", Path: "/m/codes", Pretokenizer: "moses", Lang: "de"},
		{Kind: "subword-nmt", Option: "data.trg.tokenizer_cfg.codes", Named: "codes", Path: "/m/codes", Restricted: true, Lowercase: true},
	})
	if opt.SrcTokenizer == nil || opt.SrcTokenizer.Pretokenizer != "moses" || opt.SrcTokenizer.Lang != "de" ||
		opt.TgtTokenizer == nil || !opt.TgtTokenizer.Restricted || !opt.TgtTokenizer.Lowercase || opt.TgtTokenizer.File != "/m/codes" {
		t.Errorf("src %+v tgt %+v", opt.SrcTokenizer, opt.TgtTokenizer)
	}
	if len(notes) != 2 {
		t.Errorf("notes %q", notes)
	}
}

// TestToolkitDefaults: an OpenNMT-py 3.x checkpoint exports with
// onmt_translate's decoding defaults in attnx.json (beam 5, OpenNMT-py's
// beam search, -length_penalty avg, -alpha 1, -max_length 250 with
// -max_length_ratio 1.25 over batches of 30); a 2.x one with 2.x's
// (its beam search, rules_version 2, -length_penalty none, -max_length
// 100).
func TestToolkitDefaults(t *testing.T) {
	for _, c := range []struct {
		file string
		want *Defaults
	}{
		{"onmt_v3.pt", &Defaults{Beam: 5, Rules: "opennmt", LengthPenaltyForm: "avg",
			MaxLen: 250, MaxLenFactor: 1.25, MaxLenAdd: 5, Batching: &Batching{Style: BatchingOpenNMT, Size: 30}}},
		{"onmt_v2.pt", &Defaults{Beam: 5, Rules: "opennmt", LengthPenaltyForm: "none", MaxLen: 100, RulesVersion: 2}},
	} {
		dir := filepath.Join(t.TempDir(), "m")
		mustExport(t, filepath.Join("..", "checkpoint", "testdata", "toolkits", c.file), dir, Options{})
		info, err := ReadInfo(filepath.Join(dir, InfoFile))
		if err != nil {
			t.Fatal(err)
		}
		got := info.Defaults
		if c.want == nil {
			if got != nil {
				t.Errorf("%s: defaults %+v, want none", c.file, got)
			}
			continue
		}
		wantAlpha := 1.0 // 3.x's -alpha; 2.x's is 0, with -length_penalty none
		if c.want.RulesVersion == 2 {
			wantAlpha = 0
		}
		if got == nil || got.LengthPenalty == nil || *got.LengthPenalty != wantAlpha {
			t.Fatalf("%s: defaults %+v, want alpha %v", c.file, got, wantAlpha)
		}
		got.LengthPenalty = nil
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: defaults %+v, want %+v", c.file, got, c.want)
		}
	}
}

// TestJoeyDefaults: a JoeyNMT 2 model exports with joeynmt translate's
// decoding settings from its config's testing section, JoeyNMT 2.3's
// defaults where the section says nothing.
func TestJoeyDefaults(t *testing.T) {
	fixture := filepath.Join("..", "checkpoint", "testdata", "toolkits", "joey")
	config, err := os.ReadFile(filepath.Join(fixture, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, testing string
		want          Defaults
		alpha         float64
	}{
		{"no testing section", "", Defaults{Rules: "joeynmt", MaxLenFactor: 1.5, Batching: &Batching{Style: BatchingJoeyNMT, Size: 64}}, 0},
		{"token batches", "testing:\n    batch_size: 500\n    batch_type: token\n", Defaults{Rules: "joeynmt", MaxLenFactor: 1.5, Batching: &Batching{Style: BatchingJoeyNMT, Size: 500, Tokens: true}}, 0},
		{"beam 5, beam_alpha 1", "testing:\n    beam_size: 5\n    beam_alpha: 1.0\n    n_best: 2\n    max_output_length: 30\n    min_output_length: 3\n",
			Defaults{Beam: 5, NBest: 2, LengthPenaltyForm: "wu", MaxLen: 30, Rules: "joeynmt"}, 1}, // min_output_length: 2.x never uses it
	} {
		dir := t.TempDir()
		for _, f := range []string{"best.ckpt", "src_vocab.txt", "trg_vocab.txt"} {
			data, err := os.ReadFile(filepath.Join(fixture, f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, f), data, 0o644)
		}
		os.WriteFile(filepath.Join(dir, "config.yaml"), append(append([]byte(nil), config...), c.testing...), 0o644)
		out := filepath.Join(t.TempDir(), "m")
		mustExport(t, filepath.Join(dir, "best.ckpt"), out, Options{})
		info, err := ReadInfo(filepath.Join(out, InfoFile))
		if err != nil {
			t.Fatal(err)
		}
		got := info.Defaults
		if got == nil || got.LengthPenalty == nil || *got.LengthPenalty != c.alpha {
			t.Fatalf("%s: defaults %+v, want alpha %v", c.name, got, c.alpha)
		}
		g := *got
		g.LengthPenalty = nil
		if !reflect.DeepEqual(g, c.want) {
			t.Errorf("%s: defaults %+v, want %+v", c.name, g, c.want)
		}
		if n := info.OutputLimit(10); c.want.MaxLen == 0 && n != 15 || c.want.MaxLen > 0 && n != c.want.MaxLen {
			t.Errorf("%s: output limit of 10 source tokens %d", c.name, n)
		}
	}
}

// TestControlSymbol: the toolkits' control symbols and vocabulary padding
// are told from pieces.
func TestControlSymbol(t *testing.T) {
	for v, want := range map[string]bool{
		"<s>": true, "</s>": true, "<blank>": true, "madeupword0003": true, "averyunlikelytoken0": true, "averyunlikelytoken12": true,
		"averyunlikelytoken": false, "averyunlikelytokenx": false, "madeupword": false, "token0": false, "▁the": false,
	} {
		if got := controlSymbol(v); got != want {
			t.Errorf("controlSymbol(%q) = %v, want %v", v, got, want)
		}
	}
}
