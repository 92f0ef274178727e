package translate

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
)

// TestOpenNMTRules translates the demo's OpenNMT-py-shaped date model with
// Rules RulesOpenNMT (decode.OpenNMTBeam, checked against OpenNMT-py's own
// BeamSearch in package decode): the held-out dates come out right, each
// result lists n_best hypotheses best first by OpenNMT-py's avg score,
// score / (tokens + 1), and the loop engine is refused.
func TestOpenNMTRules(t *testing.T) {
	needORT(t)
	dir := filepath.Join(t.TempDir(), "onmt")
	if _, err := modeldir.Export("../testdata/demo/onmt_dates.pt", dir, modeldir.Options{Greedy: true, Beam: true}); err != nil {
		t.Fatal(err)
	}
	held, err := os.ReadFile("../testdata/demo/heldout.txt")
	if err != nil {
		t.Fatal(err)
	}
	var src, want []string
	for _, l := range strings.Split(strings.TrimSpace(string(held)), "\n")[:30] {
		s, w, _ := strings.Cut(l, "\t")
		src, want = append(src, s), append(want, w)
	}
	tr, err := Open(dir, Options{Beam: 5, NBest: 2, Rules: RulesOpenNMT})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Engine() != EngineSteps {
		t.Errorf("engine %s, want steps", tr.Engine())
	}
	res, err := tr.Translate(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	for i, r := range res {
		if r.Text == want[i] {
			right++
		}
		if len(r.Hypotheses) != 2 {
			t.Fatalf("input %d: %d hypotheses, want n_best 2", i, len(r.Hypotheses))
		}
		for k, h := range r.Hypotheses {
			avg := float64(h.Score) / float64(len(h.Tokens)+1)
			if math.Abs(avg-float64(h.NormalizedScore)) > 1e-6*math.Abs(avg)+1e-7 {
				t.Errorf("input %d hypothesis %d: score %v over %d tokens + 1 is %v, normalised %v", i, k, h.Score, len(h.Tokens), avg, h.NormalizedScore)
			}
			if k > 0 && h.NormalizedScore > r.Hypotheses[k-1].NormalizedScore {
				t.Errorf("input %d: hypotheses out of order: %v after %v", i, h.NormalizedScore, r.Hypotheses[k-1].NormalizedScore)
			}
		}
	}
	if right < 29 {
		t.Errorf("%d of 30 held-out dates right with OpenNMT-py's beam search", right)
	}
	if _, err := Open(dir, Options{Beam: 5, Rules: RulesOpenNMT, Engine: EngineLoop}); err == nil || !strings.Contains(err.Error(), "runs on the steps engine") {
		t.Errorf("the loop engine with OpenNMT-py's rules: %v", err)
	}
	if got := openNMTMaxLen(10); got != 17 {
		t.Errorf("onmt_translate's limit for 10 source tokens: %d, want int(min(250, 12.5 + 5)) = 17", got)
	}
	if got := openNMTMaxLen(400); got != 250 {
		t.Errorf("onmt_translate's limit for 400 source tokens: %d, want 250", got)
	}
}

// TestModelOutputLimit: a model whose attnx.json records an output limit
// (JoeyNMT's max_output_length -1: 1.5 times the source) decodes within
// it unless Options.MaxLen says otherwise.
func TestModelOutputLimit(t *testing.T) {
	needORT(t)
	dir, info := modelWithDefaults(t, &modeldir.Defaults{MaxLenFactor: 1.5})
	row := []int64{4, 5, 6, 7, 8, 9} // random weights rarely reach EOS
	for _, c := range []struct {
		opt  Options
		want int
	}{{Options{}, 9}, {Options{MaxLen: 12}, 12}} {
		tr, err := Open(dir, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.TranslateIDs(context.Background(), [][]int64{row})
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		toks := res[0].Tokens
		if n := len(toks); n > c.want || n < c.want && toks[n-1] != info.Special.EOS || tr.Limit(len(row)) != c.want {
			t.Errorf("%+v: %d tokens, limit %d; want %d, or fewer ending in EOS", c.opt, len(toks), tr.Limit(len(row)), c.want)
		}
	}
}

// TestOpenNMTBlockNgram: with BlockNgram 2 no hypothesis of the demo
// model repeats a bigram (the start token counted, as OpenNMT-py counts
// it), where without it dates repeat them ("-0" in 2021-03-03); the
// tokens of IgnoreWhenBlocking may repeat theirs; an unknown token is an
// error naming it.
func TestOpenNMTBlockNgram(t *testing.T) {
	needORT(t)
	dir := filepath.Join(t.TempDir(), "onmt")
	if _, err := modeldir.Export("../testdata/demo/onmt_dates.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	src := []string{"3rd of March 2021", "10.10.2010", "the 22nd of February, 1959"}
	repeats := func(opt Options) (int, []string) {
		t.Helper()
		tr, err := Open(dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		res, err := tr.Translate(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		sos := tr.Info().Special.SOS
		n := 0
		var texts []string
		for _, r := range res {
			for _, h := range r.Hypotheses {
				seq := append([]int64{sos}, h.Tokens...)
				seen := map[[2]int64]bool{}
				for j := 1; j < len(seq); j++ {
					g := [2]int64{seq[j-1], seq[j]}
					if seen[g] && !slices.Contains(opt.IgnoreWhenBlocking, tr.Info().TgtTokens[g[0]]) && !slices.Contains(opt.IgnoreWhenBlocking, tr.Info().TgtTokens[g[1]]) {
						n++
					}
					seen[g] = true
				}
			}
			texts = append(texts, r.Text)
		}
		return n, texts
	}
	base := Options{Beam: 5, NBest: 2, Rules: RulesOpenNMT}
	if n, texts := repeats(base); n == 0 {
		t.Fatalf("no repeated bigram without blocking (%q): the test exercises nothing", texts)
	}
	blocked := base
	blocked.BlockNgram = 2
	if n, texts := repeats(blocked); n != 0 {
		t.Errorf("BlockNgram 2: %d repeated bigrams in %q", n, texts)
	}
	ignoring := blocked
	ignoring.IgnoreWhenBlocking = []string{"-", "0"}
	if n, texts := repeats(ignoring); n != 0 {
		t.Errorf("BlockNgram 2 ignoring - and 0: %d repeated bigrams without them in %q", n, texts)
	}
	bad := blocked
	bad.IgnoreWhenBlocking = []string{"<nope>"}
	if _, err := Open(dir, bad); err == nil || !strings.Contains(err.Error(), `"<nope>" is not in the target vocabulary`) {
		t.Errorf("an unknown token to ignore: %v", err)
	}
}
