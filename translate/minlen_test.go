package translate

import (
	"context"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/modeldir"
)

// decodeRows opens dir with opt and translates rows.
func decodeRows(t *testing.T, dir string, opt Options, rows [][]int64) []Result {
	t.Helper()
	tr, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.TranslateIDs(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestMinLen: with MinLen, no row ends before MinLen tokens, greedy and
// beam search alike, while the same rows without it end earlier; the loop
// engine refuses it.
func TestMinLen(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[1]
	dir, w := fixtureModel(t, f)
	rows := randomRows(rand.New(rand.NewSource(5)), 16, w.Config.SrcVocab, 8)
	shortest := func(opt Options) int {
		res := decodeRows(t, dir, opt, rows)
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
	res := decodeRows(t, dir, Options{Threads: 1, Beam: 4, NBest: 4, LengthPenalty: &alpha, LengthPenaltyWu: true}, rows)
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
	// With beam.onnx there (without it, its absence is the refusal).
	withBeam := t.TempDir()
	writeModelDir(t, withBeam, w, modelSpec{special: attention.Special{SOS: f.SOS, EOS: f.EOS, PAD: f.PAD, UNK: 3}, beam: true})
	if _, err := Open(withBeam, Options{LengthPenaltyWu: true, Engine: EngineLoop, Beam: 2}); err == nil || !strings.Contains(err.Error(), "steps engine") {
		t.Errorf("loop engine: %v", err)
	}
}

// TestReplaceUnk: each <unk> of the output becomes the source token with
// the highest attention at that step, in OutputTokens and Text; the ids
// stay.
func TestReplaceUnk(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[1]
	dir, w := fixtureModel(t, f)
	rows := randomRows(rand.New(rand.NewSource(11)), 64, w.Config.SrcVocab, 10)
	run := func(replace bool) []Result { return decodeRows(t, dir, Options{Threads: 1, ReplaceUnk: replace}, rows) }
	// Random weights rarely choose <unk> (id 3): name the commonest output
	// token <unk> in the target vocabulary instead.
	plain := run(false)
	count := map[int64]int{}
	for _, r := range plain {
		for _, id := range r.Tokens {
			if id > 3 {
				count[id]++
			}
		}
	}
	unk := int64(-1)
	for id, n := range count {
		if unk < 0 || n > count[unk] {
			unk = id
		}
	}
	info, err := modeldir.ReadInfo(filepath.Join(dir, "attnx.json"))
	if err != nil {
		t.Fatal(err)
	}
	info.TgtTokens[3], info.TgtTokens[unk] = info.TgtTokens[unk], info.TgtTokens[3]
	writeInfo(t, dir, info)
	plain, replaced := run(false), run(true)
	unks := 0
	for r := range rows {
		a, b := plain[r], replaced[r]
		if !slices.Equal(a.Tokens, b.Tokens) {
			t.Fatalf("row %d: tokens changed", r)
		}
		for i, id := range a.Tokens {
			if id != unk {
				if b.OutputTokens[i] != a.OutputTokens[i] {
					t.Errorf("row %d: token %d changed", r, i)
				}
				continue
			}
			unks++
			best := 0
			for j, x := range a.Attention[i] {
				if x > a.Attention[i][best] {
					best = j
				}
			}
			if b.OutputTokens[i] != a.SourceTokens[best] || !strings.Contains(b.Text, a.SourceTokens[best]) {
				t.Errorf("row %d step %d: %q (text %q), want the source token %q", r, i, b.OutputTokens[i], b.Text, a.SourceTokens[best])
			}
		}
	}
	if unks == 0 {
		t.Fatal("no <unk> in any output: nothing replaced")
	}
	t.Logf("%d <unk> replaced", unks)

	// Beam search: in every hypothesis of the n-best, as OpenNMT-py's
	// -replace_unk replaces; the best one's by its own attention, as above.
	beam := func(replace bool) []Result {
		return decodeRows(t, dir, Options{Threads: 1, Beam: 3, NBest: 3, ReplaceUnk: replace}, rows)
	}
	plainB, replacedB := beam(false), beam(true)
	inLater := 0
	for r := range rows {
		for k, h := range replacedB[r].Hypotheses {
			p := plainB[r].Hypotheses[k]
			if !slices.Equal(p.Tokens, h.Tokens) {
				t.Fatalf("row %d hypothesis %d: tokens changed", r, k)
			}
			for i, id := range h.Tokens {
				switch {
				case id != unk && h.OutputTokens[i] != p.OutputTokens[i]:
					t.Errorf("row %d hypothesis %d: token %d changed", r, k, i)
				case id == unk && !slices.Contains(plainB[r].SourceTokens, h.OutputTokens[i]):
					t.Errorf("row %d hypothesis %d: <unk> at %d became %q, not a source token", r, k, i, h.OutputTokens[i])
				case id == unk && k > 0:
					inLater++
				}
			}
		}
	}
	if inLater == 0 {
		t.Fatal("no <unk> in a hypothesis after the best: the n-best's replacement was not exercised")
	}
	t.Logf("%d <unk> replaced in hypotheses after the best", inLater)
}
