package decode_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
)

// TestCombineLogProbs: each toolkit's rule on two members' log-probs, by
// its formula: OpenNMT-py's mean of log-probs, its -avg_raw_probs log of
// the mean probability, fairseq's logsumexp minus log 2 (which gives -inf
// where every member does, not NaN).
func TestCombineLogProbs(t *testing.T) {
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	inf := float32(math.Inf(-1))
	a := []float32{ln(0.5), ln(0.25), ln(0.25), inf}
	b := []float32{ln(0.125), ln(0.125), ln(0.75), inf}
	for _, c := range []struct {
		rule decode.Combine
		want []float64
	}{
		{decode.MeanLogProbs, []float64{math.Log(0.25), math.Log(math.Sqrt(0.25 * 0.125)), math.Log(math.Sqrt(0.25 * 0.75)), math.Inf(-1)}},
		{decode.LogMeanProbs, []float64{math.Log(0.3125), math.Log(0.1875), math.Log(0.5), math.Inf(-1)}},
		{decode.LogSumExpMinusLogN, []float64{math.Log(0.3125), math.Log(0.1875), math.Log(0.5), math.Inf(-1)}},
	} {
		got := make([]float32, len(a))
		decode.CombineLogProbs(got, [][]float32{a, b}, len(a), c.rule)
		for j, w := range c.want {
			if math.IsInf(w, -1) {
				if !math.IsInf(float64(got[j]), -1) {
					t.Errorf("%v [%d] = %v, want -inf", c.rule, j, got[j])
				}
				continue
			}
			if math.Abs(float64(got[j])-w) > 1e-6 {
				t.Errorf("%v [%d] = %v, want %v", c.rule, j, got[j], w)
			}
		}
	}
}

// TestLogSoftmaxOfMeanRows: OpenNMT-py 3.x's rule renormalizes each row
// of the batch on its own: every row's probabilities sum to 1 and equal
// the softmax of the mean of its members' log-probs.
func TestLogSoftmaxOfMeanRows(t *testing.T) {
	const V = 3
	a := []float32{-0.5, -1.5, -2.5, -3, -0.1, -4}
	b := []float32{-1, -1, -1.5, -0.2, -3, -2}
	got := make([]float32, len(a))
	decode.CombineLogProbs(got, [][]float32{a, b}, V, decode.LogSoftmaxOfMean)
	for r := 0; r < len(a); r += V {
		var z, sum float64
		for j := r; j < r+V; j++ {
			z += math.Exp(float64(a[j]+b[j]) / 2)
		}
		for j := r; j < r+V; j++ {
			want := float64(a[j]+b[j])/2 - math.Log(z)
			if math.Abs(float64(got[j])-want) > 1e-6 {
				t.Errorf("[%d] = %v, want %v", j, got[j], want)
			}
			sum += math.Exp(float64(got[j]))
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("row %d: probabilities sum to %v", r/V, sum)
		}
	}
}

// TestEnsembleBatchGreedy: an ensemble Batch of two models with different
// weights decodes each row (sources of different lengths, in one batch)
// into the tokens of a greedy decoding done by hand, one row at a time,
// on the argmax of the two executors' log-probs combined; and an
// ensemble of one model with itself gives that model's beam search (its
// n-best lists and scores), the members' states reordered alike.
func TestEnsembleBatchGreedy(t *testing.T) {
	const vs, vt, sos, eos, maxLen = 13, 11, 1, 2, 9
	p1 := lstmPair(t, attention.Bahdanau, 8, 1, vs, vt, 1)
	p2 := lstmPair(t, attention.Bahdanau, 8, 1, vs, vt, 2)
	sources := [][]int64{{3, 4, 5, 6, 7}, {8, 9}, {10, 11, 12, 3}}
	newEx := func(p *pair) *decode.Executor {
		ex, err := p.m.NewExecutor(1, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ex.Close)
		return ex
	}
	for _, rule := range []decode.Combine{decode.MeanLogProbs, decode.LogMeanProbs, decode.LogSumExpMinusLogN, decode.LogSoftmaxOfMean} {
		b, err := decode.NewEnsembleBatch([]*decode.Executor{newEx(p1), newEx(p2)}, rule)
		if err != nil {
			t.Fatal(err)
		}
		gs := make([]decode.Search, len(sources))
		for i := range gs {
			gs[i] = &decode.Greedy{SOS: sos, EOS: eos, MaxLen: maxLen}
		}
		if err := b.Add(sources, gs); err != nil {
			t.Fatal(err)
		}
		if err := b.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		distinct := false
		for i, src := range sources {
			want := handGreedy(t, []*decode.Executor{newEx(p1), newEx(p2)}, src, rule, sos, eos, maxLen)
			if got := gs[i].(*decode.Greedy).Tokens(); !slices.Equal(got, want) {
				t.Errorf("%v row %d: %v, by hand %v", rule, i, got, want)
			}
			one := handGreedy(t, []*decode.Executor{newEx(p1)}, src, rule, sos, eos, maxLen)
			distinct = distinct || !slices.Equal(one, want)
		}
		if !distinct {
			t.Logf("%v: the ensemble gave model 1's tokens on every row", rule)
		}
	}

	beam := func(exs []*decode.Executor) []decode.Hypothesis {
		b, err := decode.NewEnsembleBatch(exs, decode.MeanLogProbs)
		if err != nil {
			t.Fatal(err)
		}
		var out []decode.Hypothesis
		for _, src := range sources {
			s := &decode.Beam{SOS: sos, EOS: eos, K: 3, MaxLen: maxLen}
			if err := b.Add([][]int64{src}, []decode.Search{s}); err != nil {
				t.Fatal(err)
			}
			if err := b.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			out = append(out, s.Hypotheses(3)...)
		}
		return out
	}
	single, twice := beam([]*decode.Executor{newEx(p1)}), beam([]*decode.Executor{newEx(p1), newEx(p1)})
	if len(single) == 0 || len(single) != len(twice) {
		t.Fatalf("beam: %d hypotheses alone, %d as an ensemble of itself", len(single), len(twice))
	}
	for i := range single {
		if !slices.Equal(single[i].Tokens, twice[i].Tokens) || single[i].Score != twice[i].Score {
			t.Errorf("beam hypothesis %d: %v %v alone, %v %v as an ensemble of itself", i, single[i].Tokens, single[i].Score, twice[i].Tokens, twice[i].Score)
		}
	}
}

// handGreedy decodes src greedily on exs step by step with the executors'
// own calls, combining their log-probs by rule.
func handGreedy(t *testing.T, exs []*decode.Executor, src []int64, rule decode.Combine, sos, eos int64, maxLen int) []int64 {
	t.Helper()
	for _, ex := range exs {
		ex.Reset()
		if err := ex.Reserve(1, len(src)); err != nil {
			t.Fatal(err)
		}
		if _, err := ex.Join([][]int64{src}, []int64{sos}, 0); err != nil {
			t.Fatal(err)
		}
	}
	var out []int64
	for len(out) < maxLen {
		lps := make([][]float32, len(exs))
		for i, ex := range exs {
			if err := ex.Step(); err != nil {
				t.Fatal(err)
			}
			lps[i] = ex.LogProbs()
		}
		comb := make([]float32, len(lps[0]))
		decode.CombineLogProbs(comb, lps, len(comb), rule)
		tok := decode.Argmax(comb)
		out = append(out, tok)
		if tok == eos {
			break
		}
		for _, ex := range exs {
			if err := ex.Next([]int{0}, []int64{tok}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// TestNewEnsembleBatchRefuses: no member, one executor given twice and
// members of different target vocabularies are refused, naming the member.
func TestNewEnsembleBatchRefuses(t *testing.T) {
	p1 := lstmPair(t, attention.Bahdanau, 8, 1, 13, 11, 1)
	p2 := lstmPair(t, attention.Bahdanau, 8, 1, 13, 12, 2)
	ex1, err := p1.m.NewExecutor(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ex1.Close()
	ex2, err := p2.m.NewExecutor(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ex2.Close()
	for _, c := range []struct {
		exs  []*decode.Executor
		want string
	}{
		{nil, "at least one executor"},
		{[]*decode.Executor{ex1, ex1}, "member 2 is an executor given twice"},
		{[]*decode.Executor{ex1, ex2}, "member 2 has a target vocabulary of 12, member 1 of 11"},
	} {
		if _, err := decode.NewEnsembleBatch(c.exs, decode.MeanLogProbs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d executors: %v, want %q", len(c.exs), err, c.want)
		}
	}
}
