package quant

import (
	"math"
	"strings"
	"testing"
)

func rows(vals ...[]float32) [][]float32 { return vals }

func TestAgreement(t *testing.T) {
	inf := float32(math.Inf(-1))
	pairs := []struct{ ref, got Decode }{
		// 0: identical, log-probs off by at most 0.01 (and -Inf on both sides).
		{Decode{Tokens: []int64{5, 6, 2}, LogProbs: rows([]float32{-0.1, inf}, []float32{-0.2, -3}, []float32{-0.3, -1})},
			Decode{Tokens: []int64{5, 6, 2}, LogProbs: rows([]float32{-0.11, inf}, []float32{-0.2, -3}, []float32{-0.3, -1})}},
		// 1: diverges at step 1; step 2's rows differ hugely but are not
		// comparable (different inputs), step 1's are.
		{Decode{Tokens: []int64{5, 7, 8, 2}, LogProbs: rows([]float32{-0.1, -2}, []float32{-0.5, -0.6}, []float32{0, 0}, []float32{0, 0})},
			Decode{Tokens: []int64{5, 9, 8, 2}, LogProbs: rows([]float32{-0.1, -2}, []float32{-0.6, -0.5}, []float32{-50, -50}, []float32{0, 0})}},
		// 2: the reduced decode stops early: diverges at step 2, where the
		// reference has token 4 and the reduced one has ended.
		{Decode{Tokens: []int64{3, 3, 4}}, Decode{Tokens: []int64{3, 3}}},
	}
	var a Agreement
	for _, p := range pairs {
		if err := a.Add(p.ref, p.got); err != nil {
			t.Fatal(err)
		}
	}
	if a.Sentences != 3 || a.SentencesIdentical != 1 {
		t.Errorf("sentences %d/%d, want 1/3", a.SentencesIdentical, a.Sentences)
	}
	// Positions: 3 + 4 + 3 = 10; identical: 3 + 3 (5, 8, 2) + 2 = 8.
	if a.Tokens != 10 || a.TokensIdentical != 8 {
		t.Errorf("tokens %d/%d, want 8/10", a.TokensIdentical, a.Tokens)
	}
	// Steps compared: 3 (sentence 0) + 2 (sentence 1, steps 0 and 1) + 0.
	if a.Steps != 5 {
		t.Errorf("steps compared = %d, want 5", a.Steps)
	}
	if math.Abs(a.MaxLogProbDev-0.1) > 1e-6 || a.MaxDevSentence != 1 || a.MaxDevStep != 1 {
		t.Errorf("max deviation %v at sentence %d step %d, want 0.1 at 1, 1", a.MaxLogProbDev, a.MaxDevSentence, a.MaxDevStep)
	}
	want := []Divergence{{Sentence: 1, Step: 1, Ref: 7, Got: 9}, {Sentence: 2, Step: 2, Ref: 4, Got: -1}}
	if len(a.Divergences) != 2 || a.Divergences[0] != want[0] || a.Divergences[1] != want[1] {
		t.Errorf("divergences %+v, want %+v", a.Divergences, want)
	}
	if r := a.TokenRate(); r != 0.8 {
		t.Errorf("token rate %v, want 0.8", r)
	}
	if err := a.Check(0.3); err != nil {
		t.Errorf("Check(0.3) = %v, want nil (1/3 identical)", err)
	}
	err := a.Check(0.5)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 sentences") || !strings.Contains(err.Error(), "sentence 1 diverges at step 1 (reference token 7, reduced token 9)") {
		t.Errorf("Check(0.5) = %v, want the count and the first divergence", err)
	}
	s := a.String()
	for _, w := range []string{"sentences identical: 1/3", "tokens identical:    8/10 (80.00%)", "max log-prob deviation: 0.1 (sentence 1, step 1; 5 steps compared)"} {
		if !strings.Contains(s, w) {
			t.Errorf("String() lacks %q:\n%s", w, s)
		}
	}
}

func TestAgreementInfiniteDeviation(t *testing.T) {
	var a Agreement
	inf := float32(math.Inf(-1))
	if err := a.Add(Decode{Tokens: []int64{1}, LogProbs: rows([]float32{inf, -1})}, Decode{Tokens: []int64{1}, LogProbs: rows([]float32{-30, -1})}); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(a.MaxLogProbDev, 1) {
		t.Errorf("-Inf against -30: deviation %v, want +Inf", a.MaxLogProbDev)
	}
	nan := float32(math.NaN())
	var b Agreement
	if err := b.Add(Decode{Tokens: []int64{1}, LogProbs: rows([]float32{-1})}, Decode{Tokens: []int64{1}, LogProbs: rows([]float32{nan})}); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(b.MaxLogProbDev, 1) {
		t.Errorf("NaN: deviation %v, want +Inf", b.MaxLogProbDev)
	}
}

func TestAgreementErrors(t *testing.T) {
	var a Agreement
	err := a.Add(Decode{Tokens: []int64{1}, LogProbs: rows([]float32{-1, -2})}, Decode{Tokens: []int64{1}, LogProbs: rows([]float32{-1})})
	if err == nil || !strings.Contains(err.Error(), "sentence 0 step 0") {
		t.Errorf("rows of different lengths: %v", err)
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		if err := a.Check(bad); err == nil || !strings.Contains(err.Error(), "not a fraction") {
			t.Errorf("Check(%v) = %v, want a threshold error", bad, err)
		}
	}
	var empty Agreement
	if empty.SentenceRate() != 1 || empty.Check(1) != nil || strings.Contains(empty.String(), "deviation") {
		t.Errorf("empty agreement: rate %v check %v string %q", empty.SentenceRate(), empty.Check(1), empty.String())
	}
}
