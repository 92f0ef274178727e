package bench

import (
	"math"
	"sort"
)

// fill sets the time fields from per-repetition encoder and decode times.
func (r *Result) fill(encs, decs []float64, steps int) {
	per := make([]float64, len(decs))
	for i, d := range decs {
		per[i] = d / float64(steps*r.Batch)
	}
	r.Reps = len(decs)
	r.MsPerTokenMedian = quantile(per, 0.5)
	r.MsPerTokenP90 = quantile(per, 0.9)
	r.MsPerTokenMin = quantile(per, 0)
	r.MsPerStepMedian = r.MsPerTokenMedian * float64(r.Batch)
	r.MsPerSentenceMedian = r.MsPerTokenMedian * float64(steps)
	if r.MsPerTokenMedian > 0 {
		r.TokensPerS = 1000 / r.MsPerTokenMedian
	}
	r.EncoderMsMedian = quantile(encs, 0.5)
}

// quantile returns the q-quantile (linear interpolation) of v.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}
