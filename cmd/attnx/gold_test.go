package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fairseqtest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// TestTranslateTgtOpenNMT runs attnx translate --src --tgt on
// OpenNMT-py 3.5.1's onmt-sp against onmt_translate -tgt -verbose's log
// (testdata/toolkits/onmt-gold/sp-351.log): with --format onmt every line
// (SENT, PRED, PRED SCORE, GOLD n, the summary lines) is the log's but
// GOLD SCOREs and GOLD PPL, which may differ in float32's last digits;
// the plain format writes each pair's score, --json its tokens and
// log-probs; bad combinations are refused naming the flags.
func TestTranslateTgtOpenNMT(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	fx := filepath.Join("..", "..", "testdata", "toolkits")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(fx, "onmt-sp", "model.pt"), "-o", model); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	src, tgt := filepath.Join(fx, "onmt-sp", "test.src"), filepath.Join(fx, "onmt-gold", "sp.tgt")
	code, stdout, stderr := attnx("translate", "--model", model, "--src", src, "--tgt", tgt, "--format", "onmt")
	if code != 0 {
		t.Fatalf("translate --tgt --format onmt: exit %d: %s", code, stderr)
	}
	log, err := os.ReadFile(filepath.Join(fx, "onmt-gold", "sp-351.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	got := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	// The log has a blank line before each SENT and the summary's.
	drop := func(ls []string) []string {
		var out []string
		for _, l := range ls {
			if l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	want, got = drop(want), drop(got)
	if len(got) != len(want) {
		t.Fatalf("%d lines, the log's %d:\n%s", len(got), len(want), stdout)
	}
	num := regexp.MustCompile(`-?[0-9]+\.[0-9]+`)
	same, gold := 0, 0
	for i := range got {
		if got[i] == want[i] {
			same++
			continue
		}
		if !strings.HasPrefix(want[i], "GOLD SCORE: ") {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
			continue
		}
		gold++
		g, w := num.FindAllString(got[i], -1), num.FindAllString(want[i], -1)
		if len(g) != len(w) || num.ReplaceAllString(got[i], "#") != num.ReplaceAllString(want[i], "#") {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
			continue
		}
		for k := range g {
			x, _ := strconv.ParseFloat(g[k], 64)
			y, _ := strconv.ParseFloat(w[k], 64)
			tol := 5e-5 + 4e-6*math.Abs(y) // a float32 sum of log-probs
			if k == 1 {
				tol = 1e-4 * math.Abs(y) // GOLD PPL, exp(-mean)
			}
			if math.Abs(x-y) > tol {
				t.Errorf("line %d: %s, the log's %s", i, got[i], want[i])
			}
		}
	}
	t.Logf("%d/%d lines identical, %d GOLD SCORE lines within float32's noise", same, len(got), gold)

	// Plain: one score a line; --json: the PairScore of each pair.
	code, plain, stderr := attnx("translate", "--model", model, "--src", src, "--tgt", tgt)
	if code != 0 {
		t.Fatalf("translate --tgt: exit %d: %s", code, stderr)
	}
	code, js, stderr := attnx("translate", "--model", model, "--src", src, "--tgt", tgt, "--json")
	if code != 0 {
		t.Fatalf("translate --tgt --json: exit %d: %s", code, stderr)
	}
	pl, jl := strings.Split(strings.TrimSpace(plain), "\n"), strings.Split(strings.TrimSpace(js), "\n")
	if len(pl) != 48 || len(jl) != 48 {
		t.Fatalf("plain %d lines, --json %d: want 48 each", len(pl), len(jl))
	}
	for i := range pl {
		var p translate.PairScore
		if err := json.Unmarshal([]byte(jl[i]), &p); err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseFloat(pl[i], 32)
		if err != nil || float32(v) != p.NormalizedScore || p.Score != p.NormalizedScore || len(p.PositionalScores) != len(p.Tokens) {
			t.Errorf("pair %d: plain %q, JSON score %v normalized %v, %d log-probs for %d tokens", i, pl[i], p.Score, p.NormalizedScore, len(p.PositionalScores), len(p.Tokens))
		}
	}

	short := filepath.Join(t.TempDir(), "short.tgt")
	os.WriteFile(short, []byte("eins\nzwei\n"), 0o644)
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--tgt", short}, "has 2 lines, --src"},
		{[]string{"--tgt", tgt, "--format", "fairseq", "--rules", "fairseq"}, "--tgt with --format fairseq"},
		{[]string{"--tgt", tgt, "--n-best", "2"}, "--tgt goes with --src"},
		{[]string{"--no-src"}, "give --src FILE too"},
	} {
		args := append([]string{"translate", "--model", model, "--src", src}, c.args...)
		if c.args[0] == "--no-src" {
			args = []string{"translate", "--model", model, "--tgt", tgt, "some text"}
		}
		code, _, stderr := attnx(args...)
		if code == 0 || !strings.Contains(stderr, c.err) || strings.Contains(stderr, "panic") {
			t.Errorf("%v: exit %d, %s: want a refusal saying %q", c.args, code, stderr, c.err)
		}
	}
}

// TestGenerateScoreReference: attnx generate --score-reference prints
// what fairseq-generate --score-reference printed on fairseq-long
// (testdata/toolkits/fairseq-score).
func TestGenerateScoreReference(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	root := filepath.Join("..", "..", "testdata", "toolkits")
	model := filepath.Join(t.TempDir(), "m")
	if code, _, stderr := attnx("export", filepath.Join(root, "fairseq-long", "checkpoint_best.pt"), "-o", model); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	code, stdout, stderr := attnx("generate", filepath.Join(root, "fairseq-generate", "data-bin"), "--model", model, "--score-reference")
	if code != 0 {
		t.Fatalf("generate --score-reference: exit %d: %s", code, stderr)
	}
	c := fairseqtest.Compare(t, filepath.Join(root, "fairseq-score", "score-reference"), stdout)
	t.Logf("%d of %d lines identical, the others within tolerance", c.Identical, c.Lines)
}
