package translate

import (
	"context"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fixtures"
)

// TestMinLen: with MinLen, no row ends before MinLen tokens, greedy and
// beam search alike, while the same rows without it end earlier; the loop
// engine refuses it.
func TestMinLen(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[1]
	dir, w := fixtureModel(t, f)
	rows := randomRows(rand.New(rand.NewSource(5)), 16, w.Config.SrcVocab, 8)
	shortest := func(opt Options) int {
		tr, err := Open(dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		res, err := tr.TranslateIDs(context.Background(), rows)
		if err != nil {
			t.Fatal(err)
		}
		n := 1 << 30
		for _, r := range res {
			for i, id := range r.Tokens {
				if id == f.EOS {
					n = min(n, i)
				}
			}
			for _, h := range r.Hypotheses {
				for i, id := range h.Tokens {
					if id == f.EOS {
						n = min(n, i)
					}
				}
			}
		}
		return n
	}
	for _, beam := range []int{1, 3} {
		free := shortest(Options{Threads: 1, Beam: beam, NBest: beam})
		if free >= 4 {
			t.Fatalf("beam %d: the shortest output ends at %d: the test needs one ending before 4", beam, free)
		}
		if got := shortest(Options{Threads: 1, Beam: beam, NBest: beam, MinLen: 4}); got < 4 {
			t.Errorf("beam %d, MinLen 4: an output ends after %d tokens", beam, got)
		}
	}
	if _, err := Open(dir, Options{MinLen: 2, Engine: EngineLoop}); err == nil || !strings.Contains(err.Error(), "steps engine") {
		t.Errorf("loop engine: %v", err)
	}
}

// TestLengthPenaltyWu: the n-best list is ranked by score / ((5 + len) /
// 6) ** alpha.
func TestLengthPenaltyWu(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[1]
	dir, w := fixtureModel(t, f)
	rows := randomRows(rand.New(rand.NewSource(9)), 6, w.Config.SrcVocab, 8)
	alpha := 0.6
	tr, err := Open(dir, Options{Threads: 1, Beam: 4, NBest: 4, LengthPenalty: &alpha, LengthPenaltyWu: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.TranslateIDs(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	lengths := map[int]bool{}
	for _, r := range res {
		for i, h := range r.Hypotheses {
			lengths[len(h.Tokens)] = true
			want := float32(float64(h.Score) / math.Pow((5+float64(len(h.Tokens)))/6, alpha))
			if h.NormalizedScore != want {
				t.Errorf("normalised %v, want %v", h.NormalizedScore, want)
			}
			if i > 0 && h.NormalizedScore > r.Hypotheses[i-1].NormalizedScore {
				t.Errorf("n-best not in order: %v after %v", h.NormalizedScore, r.Hypotheses[i-1].NormalizedScore)
			}
		}
	}
	if len(lengths) < 2 {
		t.Errorf("every hypothesis has the same length %v: the penalty was not exercised", lengths)
	}
	if _, err := Open(dir, Options{LengthPenaltyWu: true, Engine: EngineLoop, Beam: 2}); err == nil || !strings.Contains(err.Error(), "steps engine") {
		t.Errorf("loop engine: %v", err)
	}
}
