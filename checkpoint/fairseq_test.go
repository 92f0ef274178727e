package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadFairseqDict: dictionaries read as fairseq's Dictionary reads
// them: its four specials first, the count the last field (symbols may
// hold spaces), #fairseq:overwrite repeating a symbol; anything else
// refused naming the file, the line and the form expected.
func TestReadFairseqDict(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		want       []string
		err        string
	}{
		{"plain", "the 10\nHaus 3\n", []string{"<s>", "<pad>", "</s>", "<unk>", "the", "Haus"}, ""},
		{"spaces and overwrite", "a b 5\nthe 4\nthe 1 #fairseq:overwrite\n", []string{"<s>", "<pad>", "</s>", "<unk>", "a b", "the", "the"}, ""},
		{"special again", "<unk> 7 #fairseq:overwrite\n", []string{"<s>", "<pad>", "</s>", "<unk>", "<unk>"}, ""},
		{"duplicate", "the 4\nthe 1\n", nil, `line 2: symbol "the" is listed twice (fairseq refuses that unless the line ends with #fairseq:overwrite)`},
		{"no count", "the\n", nil, `line 1: "the": expected "SYMBOL COUNT [#fairseq:overwrite]"`},
		{"bad count", "the x\n", nil, `line 1: "the x": the count "x" is not a whole number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name+".txt")
			writeFiles(t, dir, map[string]string{c.name + ".txt": c.text})
			got, err := ReadFairseqDict(p)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), p)):
				t.Fatalf("error %v, want one naming %s and %q", err, p, c.err)
			case c.err == "" && !slices.Equal(got, c.want):
				t.Fatalf("%q, want %q", got, c.want)
			}
		})
	}
}

// TestReadFairseq: where the dictionaries, the language pair and the BPE
// come from, for cfgs of each kind.
func TestReadFairseq(t *testing.T) {
	dict := func(words ...string) string {
		var b strings.Builder
		for _, w := range words {
			b.WriteString(w + " 1\n")
		}
		return b.String()
	}
	model := &Object{Class: "argparse.Namespace", Attrs: map[string]any{"arch": "lstm", "_name": "lstm"}}
	origin := func(cfg map[string]any) *Origin {
		return &Origin{Toolkit: ToolkitFairseq, Entries: map[string]any{"cfg": cfg, "args": nil}}
	}
	t.Run("named pair in data-bin, bpe from cfg", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"data-bin/dict.de.txt": dict("a", "b"), "data-bin/dict.en.txt": dict("x"), "codes.txt": "#version: 0.2\n"})
		o := origin(map[string]any{"model": model, "task": map[string]any{"data": "/elsewhere/data-bin", "source_lang": "de", "target_lang": "en"},
			"bpe": map[string]any{"_name": "subword_nmt", "bpe_codes": "/train/codes.txt", "bpe_separator": "@@"}, "tokenizer": map[string]any{"_name": "moses"}})
		f, err := ReadFairseq(o, filepath.Join(dir, "checkpoint_best.pt"), FairseqFiles{}, 6, 5)
		if err != nil {
			t.Fatal(err)
		}
		if f.SrcLang != "de" || len(f.SrcDict) != 6 || len(f.TgtDict) != 5 || FairseqArch(o) != "lstm" {
			t.Fatalf("%s-%s, %d/%d symbols, arch %q", f.SrcLang, f.TgtLang, len(f.SrcDict), len(f.TgtDict), FairseqArch(o))
		}
		r := f.Tokenizers[0]
		if r == nil || r.Kind != TokenizerSubwordNMT || r.Path != filepath.Join(dir, "codes.txt") || r.Pretokenizer != "moses" || r.Lang != "de" || f.Tokenizers[1].Lang != "en" {
			t.Fatalf("tokenizers %+v %+v", r, f.Tokenizers[1])
		}
	})
	t.Run("pair from the dictionaries' sizes, hub bpecodes", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"dict.aa.txt": dict("a"), "dict.zz.txt": dict("a", "b", "c"), "bpecodes": "#version: 0.2\n"})
		f, err := ReadFairseq(origin(map[string]any{"model": model, "task": map[string]any{}}), filepath.Join(dir, "ckpt.pt"), FairseqFiles{}, 7, 5)
		if err != nil {
			t.Fatal(err)
		}
		if f.SrcLang != "zz" || f.TgtLang != "aa" || f.Tokenizers[0] == nil || f.Tokenizers[0].Named != "bpecodes" {
			t.Fatalf("%s-%s, tokenizer %+v", f.SrcLang, f.TgtLang, f.Tokenizers[0])
		}
	})
	t.Run("older checkpoints: args only", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"dict.en.txt": dict("a"), "dict.de.txt": dict("b", "c"), "code": "#version: 0.2\n"})
		args := &Object{Class: "argparse.Namespace", Attrs: map[string]any{"arch": "lstm_luong_wmt_en_de", "source_lang": "en", "target_lang": "de", "bpe": "fastbpe", "bpe_codes": "/train/code"}}
		o := &Origin{Toolkit: ToolkitFairseq, Entries: map[string]any{"args": args}}
		f, err := ReadFairseq(o, filepath.Join(dir, "checkpoint_last.pt"), FairseqFiles{}, 5, 6)
		if err != nil {
			t.Fatal(err)
		}
		if FairseqArch(o) != "lstm_luong_wmt_en_de" || f.SrcLang != "en" || f.Tokenizers[0] == nil || f.Tokenizers[0].Kind != TokenizerSubwordNMT ||
			f.Tokenizers[0].Path != filepath.Join(dir, "code") || len(f.Notes) == 0 || !strings.Contains(f.Notes[0], "fastbpe") {
			t.Fatalf("arch %q, %s-%s, tokenizer %+v, notes %q", FairseqArch(o), f.SrcLang, f.TgtLang, f.Tokenizers[0], f.Notes)
		}
	})
	for _, c := range []struct {
		name  string
		files map[string]string
		cfg   map[string]any
		ff    FairseqFiles
		want  string
	}{
		{"no model options", nil, map[string]any{}, FairseqFiles{}, "whose cfg has no model section and which has no args"},
		{"no dictionaries", nil, map[string]any{"model": model}, FairseqFiles{}, "(pass --data DIR); tried"},
		{"ambiguous pair", map[string]string{"dict.a.txt": dict("x"), "dict.b.txt": dict("y")}, map[string]any{"model": model}, FairseqFiles{}, "do not tell source (5 rows) from target (5 rows): pass --source-lang and --target-lang"},
		{"three dictionaries", map[string]string{"dict.a.txt": dict("x"), "dict.b.txt": dict("y"), "dict.c.txt": dict("z")}, map[string]any{"model": model}, FairseqFiles{}, "holds 3 dictionaries (a, b, c), not two"},
		{"other bpe", map[string]string{"dict.a.txt": dict("x"), "dict.b.txt": dict("y", "z")}, map[string]any{"model": model, "bpe": map[string]any{"_name": "gpt2"}}, FairseqFiles{SrcLang: "a", TgtLang: "b"}, "fairseq --bpe gpt2: attnx applies subword_nmt, fastbpe and sentencepiece"},
		{"other tokenizer", map[string]string{"dict.a.txt": dict("x"), "dict.b.txt": dict("y", "z")}, map[string]any{"model": model, "tokenizer": map[string]any{"_name": "space_tok"}}, FairseqFiles{SrcLang: "a", TgtLang: "b"}, "fairseq --tokenizer space_tok: attnx applies moses (or none)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			_, err := ReadFairseq(origin(c.cfg), filepath.Join(dir, "ckpt.pt"), c.ff, 5, 5)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
