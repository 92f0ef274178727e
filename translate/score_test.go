package translate_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/attnx/attnx/translate"
)

// goldScores reads the GOLD SCORE lines of an onmt_translate -tgt
// -verbose log (testdata/toolkits/onmt-gold, make_onmt_gold.sh), one per
// sentence in order.
func goldScores(t *testing.T, path string) []float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, m := range regexp.MustCompile(`(?m)^GOLD SCORE: (\S+)$`).FindAllStringSubmatch(string(data), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestScoreMatchesOpenNMT scores given translations with OpenNMT-py's
// own checkpoints and compares each pair's score with onmt_translate
// -tgt's GOLD SCORE: OpenNMT-py 3.5.1 on onmt-sp (sentencepiece, 48
// pairs) and 2.3.0 on the copy-attention onmt-sum-copy (30 pairs, with
// -batch_size 1: see make_onmt_gold.sh for 2.3.0's larger batches).
// Every score prints to the same four decimals, or lies within float32's
// noise of the rounding boundary.
func TestScoreMatchesOpenNMT(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := filepath.Join("..", "testdata", "toolkits")
	for _, c := range []struct{ name, ckpt, src, tgt, log string }{
		{"onmt-sp-351", "onmt-sp/model.pt", "onmt-sp/test.src", "onmt-gold/sp.tgt", "onmt-gold/sp-351.log"},
		{"onmt-sum-copy-230", "onmt-sum-copy/model.pt", "onmt-sum-copy/test.src", "onmt-sum-copy/test.tgt", "onmt-gold/copy-230-b1.log"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "m")
			if _, err := modeldir.Export(filepath.Join(dir, c.ckpt), m, modeldir.Options{}); err != nil {
				t.Fatal(err)
			}
			tr, err := translate.Open(m, translate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			src, tgt := readLines(t, filepath.Join(dir, c.src)), readLines(t, filepath.Join(dir, c.tgt))
			want := goldScores(t, filepath.Join(dir, c.log))
			if len(want) != len(src) {
				t.Fatalf("%s has %d GOLD SCORE lines for %d sources", c.log, len(want), len(src))
			}
			got, err := tr.Score(context.Background(), src, tgt)
			if err != nil {
				t.Fatal(err)
			}
			same, worst := 0, 0.0
			for i, p := range got {
				if len(p.PositionalScores) != len(p.Tokens) || p.Tokens[len(p.Tokens)-1] != tr.Info().Special.EOS {
					t.Errorf("pair %d: %d scores for %d tokens, last token %d: want one per token, EOS last", i, len(p.PositionalScores), len(p.Tokens), p.Tokens[len(p.Tokens)-1])
				}
				if p.NormalizedScore != p.Score {
					t.Errorf("pair %d: normalized score %v, score %v: OpenNMT-py's gold score is the sum", i, p.NormalizedScore, p.Score)
				}
				g := fmt.Sprintf("%.4f", p.Score)
				worst = max(worst, math.Abs(float64(p.Score)-want[i]))
				if g == fmt.Sprintf("%.4f", want[i]) {
					same++
					continue
				}
				// float32 sums of tens of log-probs: a few ulps of |score|.
				if d := math.Abs(float64(p.Score) - want[i]); d > 5e-5+4e-6*math.Abs(want[i]) {
					t.Errorf("pair %d: GOLD SCORE %s, OpenNMT-py's %.4f (off by %.2g)", i, g, want[i], d)
				}
			}
			t.Logf("%s: %d/%d gold scores print identically, the rest within float32's noise; largest difference %.2g", c.name, same, len(got), worst)
			// A second call in other batches gives the same scores.
			one, err := tr.Score(context.Background(), src[3:4], tgt[3:4])
			if err != nil {
				t.Fatal(err)
			}
			if one[0].Score != got[3].Score {
				t.Errorf("pair 3 alone scores %v, in the corpus %v: a pair's score must not depend on its batch", one[0].Score, got[3].Score)
			}
		})
	}
}

// TestScoreRefusals: bad calls get a *RequestError naming what is at
// fault, and blank sources the zero PairScore.
func TestScoreRefusals(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	m := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export("../testdata/toolkits/onmt-sp/model.pt", m, modeldir.Options{Greedy: true}); err != nil {
		t.Fatal(err)
	}
	tr, err := translate.Open(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	// The loop engine's Translator scores on decoder.onnx too, opened on
	// the first call.
	loop, err := translate.Open(m, translate.Options{Beam: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	if loop.Engine() != translate.EngineLoop {
		t.Fatalf("greedy decoding with greedy.onnx runs on engine %q, want %q", loop.Engine(), translate.EngineLoop)
	}
	pair := []string{"Things have changed since 1991 ."}
	a, err := loop.Score(ctx, pair, []string{"Die Dinge haben sich seit 1991 geändert ."})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.Score(ctx, pair, []string{"Die Dinge haben sich seit 1991 geändert ."})
	if err != nil {
		t.Fatal(err)
	}
	if a[0].Score != b[0].Score || a[0].Score >= 0 {
		t.Errorf("loop engine's score %v, steps engine's %v: want the same negative score", a[0].Score, b[0].Score)
	}
	var re *translate.RequestError
	if _, err := tr.Score(ctx, []string{"a b", "c"}, []string{"x"}); !errors.As(err, &re) || !strings.Contains(err.Error(), "2 sources and 1 references") {
		t.Errorf("2 sources, 1 reference: %v, want a RequestError saying so", err)
	}
	if _, err := tr.Score(ctx, []string{"fine", "bad \xff"}, []string{"gut", "schlecht"}); !errors.As(err, &re) || re.Row != 1 {
		t.Errorf("invalid UTF-8 in source 1: %v, want a RequestError of row 1", err)
	}
	got, err := tr.Score(ctx, []string{" ", "Things have changed ."}, []string{"Nichts", ""})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Tokens != nil || got[0].Score != 0 {
		t.Errorf("blank source: %+v, want the zero PairScore", got[0])
	}
	if len(got[1].Tokens) != 1 || got[1].Tokens[0] != tr.Info().Special.EOS || got[1].Score >= 0 {
		t.Errorf("blank reference: tokens %v score %v, want EOS alone with its negative log-prob", got[1].Tokens, got[1].Score)
	}
}

// BenchmarkScore scores OpenNMT-py 3.5.1's onmt-sp test set (48 pairs,
// ten times over: 480) against its references in batches of
// Options.BatchSize, on one ONNX Runtime thread, and reports pairs/s;
// "translate" translates the same sources at the model's defaults (beam
// 5) for comparison.
func BenchmarkScore(b *testing.B) {
	testenv.ORT(b, onnxrun.Init())
	m := filepath.Join(b.TempDir(), "m")
	if _, err := modeldir.Export("../testdata/toolkits/onmt-sp/model.pt", m, modeldir.Options{}); err != nil {
		b.Fatal(err)
	}
	var src, tgt []string
	for range 10 {
		src = append(src, readLinesB(b, "../testdata/toolkits/onmt-sp/test.src")...)
		tgt = append(tgt, readLinesB(b, "../testdata/toolkits/onmt-gold/sp.tgt")...)
	}
	ctx := context.Background()
	for _, batch := range []int{1, 30, 64} {
		tr, err := translate.Open(m, translate.Options{Threads: 1, BatchSize: batch})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("score/batch=%d", batch), func(b *testing.B) {
			for range b.N {
				if _, err := tr.Score(ctx, src, tgt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(src))/b.Elapsed().Seconds(), "pairs/s")
		})
		if batch == 30 {
			b.Run("translate/batch=30", func(b *testing.B) {
				for range b.N {
					if _, err := tr.Translate(ctx, src); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*len(src))/b.Elapsed().Seconds(), "sentences/s")
			})
		}
		tr.Close()
	}
}

func readLinesB(b *testing.B, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestScoreMatchesFairseq scores fairseq-generate --score-reference's
// pairs (fairseq 0.12.2 on fairseq-long, testdata/toolkits/fairseq-score:
// its S- lines and the references of its H- lines, pieces) and compares with its H- lines (the mean
// log-prob per token, base 2) and P- lines (each token's, four decimals).
func TestScoreMatchesFairseq(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	m := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export("../testdata/toolkits/fairseq-long/checkpoint_best.pt", m, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	tr, err := translate.Open(m, translate.Options{Pretokenized: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fields := map[string]map[int]string{}
	for _, l := range readLines(t, "../testdata/toolkits/fairseq-score/score-reference.out") {
		kind, rest, ok := strings.Cut(l, "-")
		if !ok || len(kind) != 1 {
			continue
		}
		id, text, _ := strings.Cut(rest, "\t")
		n, err := strconv.Atoi(id)
		if err != nil {
			continue
		}
		if fields[kind] == nil {
			fields[kind] = map[int]string{}
		}
		fields[kind][n] = text
	}
	n := len(fields["H"])
	if n != 48 {
		t.Fatalf("%d H- lines, want 48", n)
	}
	var src, tgt []string
	for i := range n {
		// The H- line's text is the reference as the model's pieces (T-
		// spells the unknown token <<unk>>).
		_, hyp, _ := strings.Cut(fields["H"][i], "\t")
		src, tgt = append(src, fields["S"][i]), append(tgt, hyp)
	}
	got, err := tr.Score(context.Background(), src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	same, worst := 0, 0.0
	for i, p := range got {
		score, _, _ := strings.Cut(fields["H"][i], "\t")
		want, _ := strconv.ParseFloat(score, 64)
		g := float64(p.NormalizedScore) / math.Ln2
		if d := math.Abs(g-want) / math.Abs(want); d > worst {
			worst = d
		}
		if math.Abs(g-want) > 2e-6*math.Abs(want)+1e-6 {
			t.Errorf("pair %d: score %v (base 2), fairseq's %v", i, g, want)
		}
		pos := strings.Fields(fields["P"][i])
		if len(pos) != len(p.PositionalScores) {
			t.Fatalf("pair %d: %d token scores, fairseq's %d", i, len(p.PositionalScores), len(pos))
		}
		all := true
		for k, x := range p.PositionalScores {
			s := fmt.Sprintf("%.4f", float64(x/float32(math.Ln2)))
			if s != pos[k] {
				all = false
				y, _ := strconv.ParseFloat(pos[k], 64)
				if math.Abs(float64(x)/math.Ln2-y) > 1.5e-4 {
					t.Errorf("pair %d token %d: %s, fairseq's %s", i, k, s, pos[k])
				}
			}
		}
		if all {
			same++
		}
	}
	t.Logf("48/48 scores within %.2g relative of fairseq's; P- lines identical on %d/48, the rest within 1.5e-4", worst, same)
}
