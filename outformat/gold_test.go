package outformat_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/outformat"
	"github.com/attnx/attnx/translate"
)

func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// goldLines keeps a log's GOLD n, GOLD SCORE and summary lines.
var goldLines = regexp.MustCompile(`^(GOLD \d+: |GOLD SCORE: |PRED SCORE: .* NB SENTENCES|GOLD SCORE: .* NB SENTENCES)`)

// TestGoldMatchesOpenNMT writes the GOLD lines and the summary lines of
// onmt_translate -tgt -verbose for OpenNMT-py 3.5.1's onmt-sp (48 pairs)
// and 2.3.0's copy model onmt-sum-copy (30 pairs, -batch_size 1) and
// compares them with the toolkit's logs (testdata/toolkits/onmt-gold):
// the GOLD n lines identical (3.5.1's padded to the batch's longest
// reference), each GOLD SCORE identical or within float32's noise of
// the toolkit's, and the summary lines identical but for digits a
// float32 ulp of the total moves.
func TestGoldMatchesOpenNMT(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := filepath.Join("..", "testdata", "toolkits")
	for _, c := range []struct {
		name, ckpt, src, tgt, log string
		opt                       translate.Options
	}{
		{"onmt-sp-351", "onmt-sp/model.pt", "onmt-sp/test.src", "onmt-gold/sp.tgt", "onmt-gold/sp-351.log", translate.Options{}},
		{"onmt-sum-copy-230", "onmt-sum-copy/model.pt", "onmt-sum-copy/test.src", "onmt-sum-copy/test.tgt", "onmt-gold/copy-230-b1.log", translate.Options{BatchSize: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "m")
			if _, err := modeldir.Export(filepath.Join(dir, c.ckpt), m, modeldir.Options{}); err != nil {
				t.Fatal(err)
			}
			tr, err := translate.Open(m, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			src, tgt := lines(t, filepath.Join(dir, c.src)), lines(t, filepath.Join(dir, c.tgt))
			ctx := context.Background()
			res, err := tr.Translate(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			scores, err := tr.Score(ctx, src, tgt)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			g := outformat.NewGold(tr.Info())
			for i := range src {
				if err := g.WriteSentence(&b, i, res[i], scores[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := g.WriteSummary(&b); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, l := range lines(t, filepath.Join(dir, c.log)) {
				if goldLines.MatchString(l) {
					want = append(want, l)
				}
			}
			got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if len(got) != len(want) {
				t.Fatalf("%d lines, the log's %d", len(got), len(want))
			}
			same := 0
			for i := range got {
				if got[i] == want[i] {
					same++
					continue
				}
				if regexp.MustCompile(`^GOLD \d+: `).MatchString(want[i]) || !nearLine(got[i], want[i]) {
					t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
			t.Logf("%s: %d/%d lines identical, the rest differ in float32's last digits", c.name, same, len(got))
			for _, l := range got[len(got)-2:] {
				t.Log(l)
			}
		})
	}
}

var number = regexp.MustCompile(`-?[0-9]+\.[0-9]+|-?inf`)

// nearLine: a and b have the same words and numbers within float32's
// noise (a few ulps of a sum of float32 log-probs; perplexities, the
// exp of a mean, within the same relative difference times the mean).
func nearLine(a, b string) bool {
	if number.ReplaceAllString(a, "#") != number.ReplaceAllString(b, "#") {
		return false
	}
	na, nb := number.FindAllString(a, -1), number.FindAllString(b, -1)
	for i := range na {
		x, _ := strconv.ParseFloat(na[i], 64)
		y, _ := strconv.ParseFloat(nb[i], 64)
		tol := 5e-5 + 4e-6*math.Abs(y)
		if strings.Contains(a, "PPL") && i == 1 {
			tol = 1e-4 * math.Abs(y) // exp(s): relative error of s times |s| (s ~ 100)
		}
		if math.Abs(x-y) > tol {
			return false
		}
	}
	return true
}
