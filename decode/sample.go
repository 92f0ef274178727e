package decode

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// sampleFilter is how a toolkit's sampling narrows the tokens it draws
// from: TopP keeps the nucleus, the most probable tokens while their
// cumulative probability (in float32, as torch's cumsum) stays below
// TopP, and the one that reaches it; TopK the TopK highest scores, with
// KeepTies every score equal to the K-th as well (OpenNMT-py's
// torch.lt(logits, kth_best)). With Both, top-p then top-k apply
// (OpenNMT-py); without, top-p alone when set, else top-k (fairseq).
type sampleFilter struct {
	TopK           int
	TopP           float64
	KeepTies, Both bool
}

// drawToken draws a token from scores (log-probs or logits: it draws in
// proportion to softmax(scores)) among those f keeps, never one of
// probability 0. order is scratch space.
func drawToken(rng *rand.Rand, scores []float32, f sampleFilter, order *[]int32) int {
	o := (*order)[:0]
	m := float32(math.Inf(-1))
	for v, x := range scores {
		o = append(o, int32(v))
		m = max(m, x)
	}
	*order = o
	if math.IsInf(float64(m), -1) || m != m {
		return 0 // nothing can be drawn; the caller's rules decide
	}
	prob := func(v int32) float64 { return math.Exp(float64(scores[v] - m)) }
	n := len(o)
	if f.TopP > 0 || f.TopK > 0 {
		slices.SortStableFunc(o, func(x, y int32) int { return cmp.Compare(scores[y], scores[x]) })
	}
	if f.TopP > 0 {
		total := 0.0
		for _, v := range o {
			total += prob(v)
		}
		var cum float32
		k := 0
		for _, v := range o {
			cum += float32(prob(v) / total)
			if cum >= float32(f.TopP) {
				break
			}
			k++
		}
		n = min(k+1, len(o))
	}
	if f.TopK > 0 && (f.Both || f.TopP <= 0) && f.TopK < n {
		k := f.TopK
		if f.KeepTies {
			for k < n && scores[o[k]] == scores[o[f.TopK-1]] {
				k++
			}
		}
		n = k
	}
	total := 0.0
	for _, v := range o[:n] {
		total += prob(v)
	}
	u := rng.Float64() * total
	last := o[0]
	for _, v := range o[:n] {
		p := prob(v)
		if p == 0 {
			continue
		}
		last = v
		if u < p {
			return int(v)
		}
		u -= p
	}
	return int(last)
}
