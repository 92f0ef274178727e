package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/mtscore"
)

func TestScore(t *testing.T) {
	td := filepath.Join("..", "..", "mtscore", "testdata")
	p := func(n string) string { return filepath.Join(td, n) }
	code, out, errOut := attnx("score", "--ref", p("wmt17.ref"), p("wmt17.uedin-nmt"))
	want := "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" + mtscore.Version + " = 31.13 62.4/36.8/24.5/16.7 (BP = 1.000 ratio = 1.015 hyp_len = 7512 ref_len = 7399)\n" +
		"chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:" + mtscore.Version + " = 58.91\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}

	// two references, hypotheses on stdin, JSON
	hyp, _ := os.ReadFile(p("mixed.hyp"))
	stdin = strings.NewReader(string(hyp))
	defer func() { stdin = os.Stdin }()
	code, out, errOut = attnx("score", "--ref", p("mixed.ref1"), "--ref", p("mixed.ref2"), "--json", "--metrics", "bleu")
	var js map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &js) != nil || js["score"] != 56.52 || js["nrefs"] != "2" {
		t.Errorf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}

	// mistakes name the file at fault
	short := filepath.Join(t.TempDir(), "short.txt")
	os.WriteFile(short, []byte("one line\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"score", p("wmt17.ref")}, 2, "--ref FILE is required"},
		{[]string{"score", "--ref", short, p("wmt17.ref")}, 1, "--ref " + short + " has 1 lines and " + p("wmt17.ref") + " has 400"},
		{[]string{"score", "--ref", p("nope.txt"), p("wmt17.ref")}, 1, "nope.txt: no such file"},
		{[]string{"score", "--ref", p("wmt17.ref"), "--metrics", "ter", p("wmt17.ref")}, 2, "--metrics ter: want bleu, chrf and/or rouge"},
		{[]string{"score", "--ref", p("wmt17.ref"), "--tokenize", "intl", p("wmt17.ref")}, 2, `tokenizer "intl": want 13a or none`},
	} {
		code, _, errOut := attnx(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// TestScoreReadsAsSacreBLEU: lines end at \n, \r\n or a lone \r (Python's
// universal newlines); "-" is stdin; an empty file and bytes that are not
// UTF-8 are refused with the file and line named.
func TestScoreReadsAsSacreBLEU(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ref := write("ref", "the black cat sat down\non the old mat by the door\nit was red and warm there\n")
	for _, hyp := range []string{"the black cat sat down\ron the old mat by the door\r\nit was red and warm there", "the black cat sat down\non the old mat by the door\nit was red and warm there\n"} {
		code, out, errOut := attnx("score", "--ref", ref, "--metrics", "bleu", write("hyp", hyp))
		if code != 0 || !strings.Contains(out, " = 100.00 ") {
			t.Errorf("hyp %q: exit %d, %q %q; want BLEU 100 over 3 lines", hyp, code, out, errOut)
		}
	}
	stdin = strings.NewReader("the black cat sat down\non the old mat by the door\nit was red and warm there\n")
	defer func() { stdin = os.Stdin }()
	if code, out, errOut := attnx("score", "--ref", ref, "--metrics", "bleu", "-"); code != 0 || !strings.Contains(out, " = 100.00 ") {
		t.Errorf("hyp -: exit %d, %q %q", code, out, errOut)
	}
	empty := write("empty", "")
	bad := write("bad", "the cat sat\non the \xffmat\nit was red\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ref", ref, empty}, empty + " is empty: nothing to score"},
		{[]string{"--ref", empty, ref}, "--ref " + empty + " is empty"},
		{[]string{"--ref", ref, bad}, bad + " line 2: not valid UTF-8 (at byte 7 of the line)"},
	} {
		code, out, errOut := attnx(append([]string{"score"}, c.args...)...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestScoreRouge: --metrics rouge prints ROUGE-1.5.5's averages for the
// summaries of mtscore/testdata/rouge (the figures files2rouge printed,
// expected.json) and rouge-score's with --rouge rouge-score; bad settings
// are usage errors naming the flag.
func TestScoreRouge(t *testing.T) {
	dir := filepath.Join("..", "..", "mtscore", "testdata", "rouge")
	ref, hyp := filepath.Join(dir, "mixed.ref"), filepath.Join(dir, "mixed.hyp")
	code, out, stderr := attnx("score", "--metrics", "rouge", "--ref", ref, hyp)
	want := "ROUGE-1    R 71.48  P 80.67  F 75.67\nROUGE-2    R 24.32  P 27.85  F 25.92\nROUGE-L    R 60.48  P 68.14  F 63.98\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, printed\n%s(want\n%s) %s", code, out, want, stderr)
	}
	code, out, _ = attnx("score", "--metrics", "rouge", "--rouge", "rouge-score", "--ref", ref, hyp)
	if code != 0 || !strings.Contains(out, "ROUGE-Lsum R 51.00  P 56.94  F 53.70") || !strings.Contains(out, "ROUGE-1    R 60.31  P 67.36  F 63.51") {
		t.Errorf("rouge-score: exit %d:\n%s", code, out)
	}
	// Issue 58: summaries whose sentences lack " ." (sum-cut): ROUGE-L as
	// files2rouge gives it after the guide's sed, and split at the tags
	// with --rouge-tag-sentences.
	cutRef, cutHyp := filepath.Join(dir, "sum-cut.ref"), filepath.Join(dir, "sum-cut.hyp")
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "ROUGE-L    R 81.19  P 86.53  F 83.47\n"},
		{[]string{"--rouge-tag-sentences"}, "ROUGE-L    R 92.33  P 97.68  F 94.62\n"},
	} {
		code, out, stderr := attnx(append([]string{"score", "--metrics", "rouge", "--ref", cutRef, cutHyp}, c.flags...)...)
		if code != 0 || !strings.HasSuffix(out, c.want) || !strings.HasPrefix(out, "ROUGE-1    R 92.33  P 97.68  F 94.62\n") {
			t.Errorf("sum-cut %v: exit %d, printed\n%s(want ROUGE-1 R 92.33 P 97.68 F 94.62 and %s) %s", c.flags, code, out, c.want, stderr)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics", "rouge", "--rouge", "rouge-2", "--ref", ref, hyp}, `implementation "rouge-2"`},
		{[]string{"--metrics", "rouge", "--rouge-tag-sentences", "--keep-sentence-tags", "--ref", ref, hyp}, "--rouge-tag-sentences splits at the tags it removes"},
		{[]string{"--metrics", "rouge", "--rouge", "rouge-score", "--rouge-tag-sentences", "--ref", ref, hyp}, "--rouge-tag-sentences is ROUGE-1.5.5's"},
		{[]string{"--metrics", "rouge", "--rouge-stem", "maybe", "--ref", ref, hyp}, `--rouge-stem "maybe"`},
		{[]string{"--metrics", "rouge", "--ref", ref, "--ref", ref, hyp}, "one --ref"},
	} {
		code, _, stderr := attnx(append([]string{"score"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want a usage error naming %q", c.args, code, stderr, c.want)
		}
	}
}
