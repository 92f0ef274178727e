package decode

import (
	"math"
	"math/rand/v2"
	"testing"
)

// benchSearch runs a search over 31 steps of a 16,000-token vocabulary
// (the OpenNMT-py recipe model's shape), the log-probs of a peaked softmax
// drawn once: the cost of the search alone, per sentence.
func benchSearch(b *testing.B, s interface {
	Search
	Reset()
}) {
	const V, steps, S = 16000, 31, 20
	K := s.Width()
	rng := rand.New(rand.NewPCG(1, 2))
	lp := make([]float32, K*V)
	for k := range K {
		row := lp[k*V : (k+1)*V]
		sum := 0.0
		for v := range row {
			row[v] = float32(rng.NormFloat64() * 3)
			sum += math.Exp(float64(row[v]))
		}
		for v := range row {
			row[v] -= float32(math.Log(sum))
		}
	}
	att := make([]float32, K*S)
	inputs, parents := make([]int64, K), make([]int, K)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Reset()
		n := 1
		for range steps {
			n = s.Advance(NewSlots(n, V, lp[:n*V], S, S, att[:n*S]), inputs, parents)
			if n == 0 {
				break
			}
		}
	}
}

func BenchmarkOpenNMTBeamSearch(b *testing.B) {
	benchSearch(b, &OpenNMTBeam{K: 5, NBest: 1, MaxLen: 31, SOS: 2, EOS: 3, UNK: 0, Penalty: "avg", Alpha: 1})
}

func BenchmarkSpecBeamSearch(b *testing.B) {
	benchSearch(b, &Beam{K: 5, MaxLen: 31, SOS: 2, EOS: 3, LengthPenalty: 1})
}

func BenchmarkJoeyBeamSearch(b *testing.B) {
	benchSearch(b, &JoeyBeam{K: 5, NBest: 1, MaxLen: 31, SOS: 2, EOS: 3, Alpha: 1})
}

func BenchmarkFairseqBeamSearch(b *testing.B) {
	benchSearch(b, &FairseqBeam{K: 5, NBest: 1, MaxLen: 31, SOS: 2, EOS: 3, LenPen: 1})
}

// BenchmarkOpenNMTGreedySearch: onmt_translate's greedy decoding (its
// sampling search with topk 1), per sentence.
func BenchmarkOpenNMTGreedySearch(b *testing.B) {
	benchSearch(b, &OpenNMTSample{K: 1, NBest: 1, MaxLen: 31, SOS: 2, EOS: 3, UNK: 0, Penalty: "avg", Alpha: 1, TopK: 1})
}

func BenchmarkGreedySearch(b *testing.B) {
	benchSearch(b, &Greedy{MaxLen: 31, SOS: 2, EOS: 3})
}
