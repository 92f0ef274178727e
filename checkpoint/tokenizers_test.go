package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOpenNMTTokenizers(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "model_step_100.pt")
	os.WriteFile(filepath.Join(dir, "spm.src.model"), []byte("x"), 0o644)
	for _, c := range []struct {
		name  string
		opt   map[string]any
		src   string // found path, "" none, "-" no ref
		tgt   string
		kind  string
		notes string
	}{
		{"sentencepiece, target shares the source's model",
			map[string]any{"transforms": []any{"filtertoolong", "sentencepiece"}, "src_subword_model": "/data/run1/spm.src.model"},
			filepath.Join(dir, "spm.src.model"), filepath.Join(dir, "spm.src.model"), TokenizerSentencePiece, ""},
		{"bpe, target missing",
			map[string]any{"transforms": []any{"bpe"}, "src_subword_model": "spm.src.model", "tgt_subword_model": "codes.tgt"},
			filepath.Join(dir, "spm.src.model"), "", TokenizerSubwordNMT, ""},
		{"no transforms", map[string]any{"src_subword_model": "spm.src.model"}, "-", "-", "", ""},
		{"onmt_tokenize with its defaults", map[string]any{"transforms": []any{"onmt_tokenize"}}, "", "", TokenizerOpenNMT, ""},
		{"onmt_tokenize, bpe, kwargs as the command line's string",
			map[string]any{"transforms": []any{"onmt_tokenize", "filtertoolong"}, "src_subword_type": "bpe", "src_subword_model": "/x/spm.src.model",
				"tgt_subword_type": "bpe", "tgt_subword_model": "codes.tgt", "src_onmttok_kwargs": "{'mode': 'aggressive', 'joiner_annotate': True}"},
			filepath.Join(dir, "spm.src.model"), "", TokenizerOpenNMT, ""},
		{"onmt_tokenize, shared vocabulary: the target takes the source's tokenizer",
			map[string]any{"transforms": []any{"onmt_tokenize"}, "share_vocab": true, "src_subword_type": "sentencepiece", "src_subword_model": "spm.src.model",
				"src_onmttok_kwargs": map[string]any{"mode": "conservative"}, "src_subword_alpha": 0.1},
			filepath.Join(dir, "spm.src.model"), filepath.Join(dir, "spm.src.model"), TokenizerOpenNMT, "subword regularization"},
		{"onmt_tokenize, unknown keyword", map[string]any{"transforms": []any{"onmt_tokenize"}, "src_onmttok_kwargs": "{'mode': 'none', 'joiner_anotate': True}"},
			"-", "-", "", `unknown option "joiner_anotate"`},
		{"onmt_tokenize, case_feature", map[string]any{"transforms": []any{"onmt_tokenize"}, "src_onmttok_kwargs": "{'case_feature': True}"},
			"-", "-", "", "case_feature: not supported"},
		{"prefix", map[string]any{"transforms": []any{"prefix", "sentencepiece"}, "src_subword_model": "spm.src.model"},
			filepath.Join(dir, "spm.src.model"), filepath.Join(dir, "spm.src.model"), TokenizerSentencePiece, "transforms include prefix, which attnx does not apply"},
	} {
		o := &OpenNMT{Opt: c.opt}
		refs, notes := o.Tokenizers(ckpt)
		for i, want := range []string{c.src, c.tgt} {
			r := refs[i]
			switch {
			case want == "-":
				if r != nil {
					t.Errorf("%s: side %d: %+v, want none", c.name, i, r)
				}
			case r == nil:
				t.Errorf("%s: side %d: no tokenizer", c.name, i)
			case r.Path != want || r.Kind != c.kind:
				t.Errorf("%s: side %d: %+v, want %s at %q", c.name, i, r, c.kind, want)
			}
		}
		if c.notes != "" && (len(notes) != 1 || !strings.Contains(notes[0], c.notes)) {
			t.Errorf("%s: notes %q", c.name, notes)
		}
	}
}

func TestJoeyNMTTokenizers(t *testing.T) {
	cfg, err := os.ReadFile(toolkitFile("joey/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"src_vocab.txt", "trg_vocab.txt"} {
		data, _ := os.ReadFile(toolkitFile("joey/" + f))
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "sp.model"), []byte("x"), 0o644)
	text := strings.Replace(string(cfg), `voc_file: "src_vocab.txt"
        level: "word"`, `voc_file: "src_vocab.txt"
        level: "bpe"
        lowercase: true
        tokenizer_type: "sentencepiece"
        tokenizer_cfg:
            model_file: "data/sp.model"`, 1)
	text = strings.Replace(text, `voc_file: "trg_vocab.txt"
        level: "word"`, `voc_file: "trg_vocab.txt"
        level: "bpe"
        tokenizer_type: "subword-nmt"
        tokenizer_cfg:
            codes: "data/bpe.codes"
            pretokenizer: "moses"`, 1)
	p := filepath.Join(dir, "config.yaml")
	os.WriteFile(p, []byte(text), 0o644)
	j, err := ReadJoeyNMT(p)
	if err != nil {
		t.Fatal(err)
	}
	src, trg := j.Tokenizers[0], j.Tokenizers[1]
	if src == nil || src.Kind != TokenizerSentencePiece || src.Path != filepath.Join(dir, "sp.model") || !src.Lowercase || !src.Restricted || src.Option != "data.src.tokenizer_cfg.model_file" {
		t.Errorf("source tokenizer %+v", src)
	}
	if trg == nil || trg.Kind != TokenizerSubwordNMT || trg.Path != "" || trg.Pretokenizer != "moses" || len(trg.Tried) == 0 {
		t.Errorf("target tokenizer %+v", trg)
	}
	bad := strings.Replace(text, `tokenizer_type: "subword-nmt"`, `tokenizer_type: "wordpiece"`, 1)
	os.WriteFile(p, []byte(bad), 0o644)
	if _, err := ReadJoeyNMT(p); err == nil || !strings.Contains(err.Error(), `data.trg.tokenizer_type "wordpiece"`) {
		t.Errorf("unknown tokenizer type: %v", err)
	}
}

// TestFindBesideFirst: a file a checkpoint names is looked up beside the
// checkpoint, for OpenNMT-py's tokenizers and JoeyNMT's vocabularies
// alike, and never in the working directory: a same-named file where
// attnx runs is not read.
func TestFindBesideFirst(t *testing.T) {
	model, wd := t.TempDir(), t.TempDir()
	for _, d := range []string{model, wd} {
		if err := os.WriteFile(filepath.Join(d, "spm.model"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(wd)
	for _, named := range []string{"spm.model", "data/spm.model", "/elsewhere/spm.model"} {
		if l := findBeside(named, model); l.path != filepath.Join(model, "spm.model") {
			t.Errorf("%s: found %s (tried %v), want the one beside the checkpoint", named, l.path, l.tried)
		}
	}
	os.Remove(filepath.Join(model, "spm.model"))
	if l := findBeside("spm.model", model); l.path != "" || !slices.Equal(l.tried, []string{filepath.Join(model, "spm.model")}) {
		t.Errorf("nothing beside: found %q, tried %q; want nothing, and the working directory's spm.model not tried", l.path, l.tried)
	}
	l := findBeside("v.txt", model, "src_vocab.txt")
	if l.path != "" || !slices.Equal(l.tried, []string{filepath.Join(model, "v.txt"), filepath.Join(model, "src_vocab.txt")}) {
		t.Errorf("tried %v", l.tried)
	}
}

// TestFindBesideStaysInside (issue 53, item 2): a name that leads out of
// the checkpoint's folder, absolute, through "..", or through a link in
// the folder (to a file or to a directory), finds nothing, though the
// file it leads to exists; the lookup says where it led. A link that
// stays inside, and a folder reached through a link, are followed.
func TestFindBesideStaysInside(t *testing.T) {
	root := t.TempDir()
	model, elsewhere := filepath.Join(root, "model"), filepath.Join(root, "elsewhere")
	for _, d := range []string{model, elsewhere, filepath.Join(model, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(elsewhere, "secret.txt")
	for _, p := range []string{secret, filepath.Join(model, "sub", "inside.txt")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link.txt": secret, "out": elsewhere, "in.txt": filepath.Join("sub", "inside.txt")} {
		if err := os.Symlink(target, filepath.Join(model, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(model, filepath.Join(root, "via")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, c := range []struct {
		named, dir string
		path       string // found
		outside    string // in the lookup's outside
	}{
		{secret, model, "", `"` + secret + `" is outside ` + model},
		{"../elsewhere/secret.txt", model, "", `"../elsewhere/secret.txt" is outside ` + model},
		{"sub/../../elsewhere/secret.txt", model, "", "is outside " + model},
		{"link.txt", model, "", filepath.Join(model, "link.txt") + " is a link to " + secret + ", outside " + model},
		{"out/secret.txt", model, "", filepath.Join(model, "out", "secret.txt") + " resolves to " + secret + ", outside " + model},
		{"..", model, "", `".." is outside ` + model},
		{"in.txt", model, filepath.Join(model, "in.txt"), ""},
		{"sub/inside.txt", filepath.Join(root, "via"), filepath.Join(root, "via", "sub", "inside.txt"), ""},
		{"in.txt", "model", filepath.Join("model", "in.txt"), ""}, // relative to the working directory
		{"link.txt", "model", "", filepath.Join("model", "link.txt") + " is a link to " + secret},
	} {
		l := findBeside(c.named, c.dir)
		if l.path != c.path || (c.outside == "") != (len(l.outside) == 0) || c.outside != "" && !strings.Contains(strings.Join(l.outside, "; "), c.outside) {
			t.Errorf("%s in %s: found %q, outside %q; want %q, outside %q", c.named, c.dir, l.path, l.outside, c.path, c.outside)
		}
	}
	// The OpenNMT-py options that name such files: the tokenizer is not
	// found, and Missing names the option, the path and why.
	o := &OpenNMT{Opt: map[string]any{"transforms": []any{"onmt_tokenize"}, "src_subword_type": "bpe", "src_subword_model": "link.txt",
		"tgt_subword_type": "bpe", "tgt_subword_model": "in.txt", "tgt_subword_vocab": secret, "tgt_vocab_threshold": int64(1)}}
	refs, _ := o.Tokenizers(filepath.Join(model, "model.pt"))
	for i, want := range []string{
		`opt.src_subword_model names bpe model "link.txt", which attnx does not read: ` + filepath.Join(model, "link.txt") + " is a link to " + secret,
		`opt.tgt_subword_vocab names subword vocabulary "` + secret + `", which attnx does not read: "` + secret + `" is outside ` + model,
	} {
		if refs[i] == nil {
			t.Errorf("side %d: no tokenizer", i)
		} else if m := refs[i].Missing(); !strings.Contains(m, want) {
			t.Errorf("side %d: %+v: Missing %q, want %q", i, refs[i], m, want)
		}
	}
}

// TestJoeyVocabStaysInside: a JoeyNMT config whose voc_file names a file
// outside the config's folder (absolute, or a link in the folder), with
// no src_vocab.txt there, is an error naming the option, the path and
// why; the file's lines are not read.
func TestJoeyVocabStaysInside(t *testing.T) {
	cfg, err := os.ReadFile(toolkitFile("joey/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := os.ReadFile(toolkitFile("joey/src_vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret_vocab.txt")
	if err := os.WriteFile(secret, vocab, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, vocFile, link, want string
	}{
		{"absolute", secret, "", `data.src.voc_file names the vocabulary "` + secret + `", which attnx does not read: "` + secret + `" is outside `},
		{"a link", "src_vocab.txt", "src_vocab.txt", " is a link to " + secret},
	} {
		dir := t.TempDir()
		trg, _ := os.ReadFile(toolkitFile("joey/trg_vocab.txt"))
		os.WriteFile(filepath.Join(dir, "trg_vocab.txt"), trg, 0o644)
		if c.link != "" {
			if err := os.Symlink(secret, filepath.Join(dir, c.link)); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(dir, "config.yaml")
		text := strings.Replace(string(cfg), `voc_file: "src_vocab.txt"`, `voc_file: "`+c.vocFile+`"`, 1)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if j, err := ReadJoeyNMT(p); err == nil || !strings.Contains(err.Error(), c.want) {
			var read any
			if j != nil {
				read = j.VocabFiles
			}
			t.Errorf("%s: read %v, error %v; want %q", c.name, read, err, c.want)
		}
	}
}
