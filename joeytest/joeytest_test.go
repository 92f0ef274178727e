package joeytest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBatches(t *testing.T) {
	rows := func(lens ...int) [][]int64 {
		var out [][]int64
		for _, n := range lens {
			out = append(out, make([]int64, n))
		}
		return out
	}
	cases := []struct {
		name    string
		rows    [][]int64
		trg     []int
		size    int
		tokens  bool
		batches [][]int
	}{
		{"sentences", rows(3, 9, 2, 4, 5), nil, 2, false, [][]int{{0, 1}, {2, 3}, {4}}},
		{"sentences, references change nothing", rows(3, 9, 2), []int{40, 1, 1}, 2, false, [][]int{{0, 1}, {2}}},
		// 2 x 9 = 18 >= 10 closes {0, 1}; 2 x 4 = 8, then 3 x 5 = 15.
		{"tokens", rows(3, 9, 2, 4, 5), nil, 10, true, [][]int{{0, 1}, {2, 3, 4}}},
		// The reference of row 2 (6 pieces, 7 with </s>) makes 2 x 7 = 14.
		{"tokens with references", rows(3, 9, 2, 4, 5), []int{1, 1, 6, 1, 1}, 10, true, [][]int{{0, 1}, {2, 3}, {4}}},
		{"one long row alone", rows(30, 2), nil, 10, true, [][]int{{0}, {1}}},
		{"empty set", nil, nil, 4, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Batches(c.rows, c.trg, c.size, c.tokens); !reflect.DeepEqual(got, c.batches) {
				t.Errorf("Batches = %v, want %v", got, c.batches)
			}
		})
	}
}

func TestSplitLines(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb", []string{"a", "b"}},
		{"a\rb\x0bc\x0cd\u2028e\u0085f", []string{"a", "b", "c", "d", "e", "f"}},
		{"a\n\nb\n", []string{"a", "", "b"}},
		{"", nil},
	}
	for _, c := range cases {
		if got := splitLines(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitLines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNumberAndPath(t *testing.T) {
	for _, c := range []struct {
		n    Number
		want string
	}{{Number{V: -1}, "-1"}, {Number{V: 1, Float: true}, "1.0"}, {Number{V: 1.3, Float: true}, "1.3"}, {Number{V: 0.00001, Float: true}, "1e-05"}} {
		if got := c.n.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.n, got, c.want)
		}
	}
	for in, want := range map[string]string{"./out/hyp.dev": "out/hyp.dev", "a//b/./c": "a/b/c", "/x/../y": "/x/../y", "dir/": "dir"} {
		if got := pyPath(in); got != want {
			t.Errorf("pyPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadSet(t *testing.T) {
	c := &Config{Src: Side{Lang: "en", Pretokenizer: "none"}, Trg: Side{Lang: "de", Pretokenizer: "none", Lowercase: true}}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"ok.en": "a b\n\nc\n", "ok.de": "X Y\n\nZ\n",
		"src.en":   "a\nb\n",
		"space.en": "a\n \n", "space.de": "x\ny\n",
		"skew.en": "a\n\nb\n", "skew.de": "x\ny\n\n",
		"short.en": "a\nb\n", "short.de": "x\n",
		"count.en": "a\n\nb\n", "count.de": "x\ny\nz\n",
	})
	s, err := LoadSet(c, "dev", "ok", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Src, []string{"a b", "c"}) || !reflect.DeepEqual(s.Trg, []string{"x y", "z"}) || !s.HasTrg() {
		t.Errorf("LoadSet(ok) = %q, %q, want the empty line dropped and the references lowercased", s.Src, s.Trg)
	}
	if s, err := LoadSet(c, "test", "src", dir); err != nil || s.HasTrg() || len(s.Src) != 2 {
		t.Errorf("LoadSet(src) without src.de = %+v, %v; want a set without references", s, err)
	}
	for _, e := range []struct{ path, msg string }{
		{"space", "space.en line 2 is white space only"},
		{"skew", "JoeyNMT drops each side's empty lines on its own"},
		{"count", "JoeyNMT drops each side's empty lines on its own"},
		{"short", "short.en has 2 lines and " + filepath.Join(dir, "short.de") + " 1"},
		{"none", "dev set: open " + filepath.Join(dir, "none.en")},
	} {
		_, err := LoadSet(c, "dev", e.path, dir)
		if err == nil || !strings.Contains(err.Error(), e.msg) {
			t.Errorf("LoadSet(%s) = %v, want an error containing %q", e.path, err, e.msg)
		}
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	head := "model_dir: m\ndata:\n  dev: valid\n  src: {lang: en}\n  trg: {lang: de}\n"
	cases := []struct {
		name, testing, err string
	}{
		{"defaults", "testing: {}\n", ""},
		{"nbest", "testing: {beam_size: 2, n_best: 3}\n", "`n_best` must be smaller than or equal to `beam_size` (2)"},
		{"metric", "testing: {eval_metrics: [bleu, meteor]}\n", `"meteor": want bleu, chrf, token_accuracy or sequence_accuracy`},
		{"ref", "testing: {return_prob: ref}\n", "testing.return_prob ref"},
		{"batchtype", "testing: {batch_type: words}\n", `testing.batch_type "words": want sentence or token`},
		{"penalty", "testing: {repetition_penalty: 0.5}\n", "Repetition penalty must be > 1"},
		{"beamtype", "testing: {beam_size: five}\n", `testing.beam_size: "five" is not a number`},
		{"float beam", "testing: {beam_size: 2.5}\n", "testing.beam_size: 2.5 is not an integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name+".yaml")
			writeFiles(t, dir, map[string]string{c.name + ".yaml": head + c.testing})
			cfg, err := ReadConfig(p)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), p)):
				t.Fatalf("ReadConfig = %v, want an error naming %s and containing %q", err, p, c.err)
			case c.err == "":
				tc := cfg.Testing
				if tc.BatchSize != 64 || tc.BatchType != "sentence" || tc.BeamSize != 1 || tc.NBest != 1 || !tc.GenerateUnk ||
					tc.BeamAlpha.String() != "-1" || tc.MaxOutputLength.String() != "-1" || tc.MinOutputLength.String() != "1" {
					t.Errorf("defaults = %+v, want JoeyNMT 2.3's", tc)
				}
				if cfg.Dev != "valid" || cfg.Test != "" || cfg.ModelDir != "m" {
					t.Errorf("ReadConfig = %+v", cfg)
				}
			}
		})
	}
	writeFiles(t, dir, map[string]string{"nodata.yaml": "model_dir: m\ndata:\n  src: {lang: en}\n  trg: {lang: de}\ntesting: {}\n"})
	if _, err := ReadConfig(filepath.Join(dir, "nodata.yaml")); err == nil || !strings.Contains(err.Error(), "neither data.dev nor data.test") {
		t.Errorf("a config without dev and test: %v", err)
	}
}

func TestSaveNames(t *testing.T) {
	dir := t.TempDir()
	hyps := []string{"a1", "a2", "b1", "b2"}
	for _, c := range []struct {
		nbest int
		files map[string]string
		line  string
	}{
		{1, map[string]string{"hyp.dev": "a1\na2\nb1\nb2\n"}, "Translations saved to: " + dir + "/hyp.dev."},
		{2, map[string]string{"hyp-0..dev": "a1\nb1\n", "hyp-1..dev": "a2\nb2\n"}, "Translations saved to: " + dir + "/hyp.dev."},
	} {
		sub := filepath.Join(dir, "n"+string(rune('0'+c.nbest)))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		r := &run{o: Options{OutputPath: sub + "/./hyp"}, res: &Result{}}
		files, err := r.save("dev", hyps, c.nbest)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != len(c.files) {
			t.Errorf("n_best %d: wrote %v, want %d files", c.nbest, files, len(c.files))
		}
		for name, want := range c.files {
			got, err := os.ReadFile(filepath.Join(sub, name))
			if err != nil || string(got) != want {
				t.Errorf("n_best %d: %s = %q, %v; want %q", c.nbest, name, got, err, want)
			}
		}
		want := strings.Replace(c.line, dir, sub, 1)
		if len(r.res.Lines) != 1 || r.res.Lines[0].Msg != want {
			t.Errorf("n_best %d: logged %+v, want %q", c.nbest, r.res.Lines, want)
		}
	}
}

func TestAccuracies(t *testing.T) {
	split := func(s string) []string { return strings.Split(s, " ") }
	hyps := []string{"a b c", "x y", "same"}
	refs := []string{"a c c d", "x", "same"}
	// Correct at the same position: a, c; x; same = 4 of 3 + 2 + 1 tokens;
	// the wants are Python's (4 / 6) * 100 and (1 / 3) * 100.
	if got, want := TokenAccuracy(hyps, refs, split), 66.66666666666666; got != want {
		t.Errorf("TokenAccuracy = %v, want %v", got, want)
	}
	if got, want := SequenceAccuracy(hyps, refs), 33.33333333333333; got != want {
		t.Errorf("SequenceAccuracy = %v, want %v", got, want)
	}
	if TokenAccuracy(nil, nil, split) != 0 || SequenceAccuracy(nil, nil) != 0 {
		t.Error("accuracies of no lines are not 0")
	}
}

func TestSacreBLEUConfig(t *testing.T) {
	hyps := []string{"The cat sat on the mat.", "A dog"}
	refs := []string{"the cat sat on the mat .", "a dog barked"}
	v, sig, err := bleu(hyps, refs, map[string]any{"tokenize": "none", "lowercase": true, "beta": 3})
	if err != nil {
		t.Fatal(err)
	}
	if sig != "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0-attnx" {
		t.Errorf("BLEU signature %q: want tokenize none and lowercase taken, chrF's beta left out", sig)
	}
	d, _, err := bleu(hyps, refs, nil)
	if err != nil || d == v {
		t.Errorf("BLEU with the defaults = %v (%v), the same as with tokenize none and lowercase (%v)", d, err, v)
	}
	c, sig, err := chrf(hyps, refs, map[string]any{"beta": 3, "tokenize": "none"})
	if err != nil || c <= 0 || c > 1 || sig != "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0-attnx" {
		t.Errorf("chrF = %v %q %v: want a fraction with chrF's keys only", c, sig, err)
	}
	for _, bad := range []map[string]any{{"tokenize": "intl"}, {"lowercase": "yes"}, {"trg_lang": "zh"}} {
		if _, _, err := bleu(hyps, refs, bad); err == nil {
			t.Errorf("bleu with sacrebleu_cfg %v: no error", bad)
		}
	}
}
