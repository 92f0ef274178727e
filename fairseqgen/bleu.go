package fairseqgen

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BLEU is fairseq's own corpus BLEU (fairseq/scoring/bleu.py's Scorer over
// its C library libbleu), which fairseq-generate reports by default
// (--scoring bleu): n-grams of token ids, not of words. Each sentence
// pair's ids are trimmed of padding on the left and of padding and </s>
// on the right (keeping at least the first id), a reference's <unk> never
// matches, and the n-gram counts are libbleu's: per order, the
// hypothesis' n-grams counted, then each reference n-gram matched while
// the count lasts. Sums are over the corpus; no smoothing.
type BLEU struct {
	RefLen, PredLen int
	Match, Count    [4]int
	pad, eos, unk   int64
}

// NewBLEU is an empty scorer for a dictionary's padding, </s> and <unk>
// ids (fairseq's 1, 2, 3).
func NewBLEU(pad, eos, unk int64) *BLEU { return &BLEU{pad: pad, eos: eos, unk: unk} }

// unkRef is what a reference's <unk> becomes, as fairseq's Scorer.add
// writes it: an id no hypothesis holds.
const unkRef = -999

// Add counts one sentence: ref the reference's ids, pred the hypothesis'.
func (b *BLEU) Add(ref, pred []int64) {
	r := make([]int32, len(ref))
	for i, id := range ref {
		if id == b.unk {
			id = unkRef
		}
		r[i] = int32(id)
	}
	p := make([]int32, len(pred))
	for i, id := range pred {
		p[i] = int32(id)
	}
	r, p = b.trim(r), b.trim(p)
	b.RefLen += len(r)
	b.PredLen += len(p)
	for n := 1; n <= 4; n++ {
		b.addNgrams(n, r, p)
	}
}

// trim is libbleu's bleu_trim: padding off the left; padding and </s> off
// the right, down to the first id.
func (b *BLEU) trim(s []int32) []int32 {
	for len(s) > 0 && int64(s[0]) == b.pad {
		s = s[1:]
	}
	if len(s) == 0 {
		return s
	}
	end := len(s) - 1
	for end > 0 && (int64(s[end]) == b.eos || int64(s[end]) == b.pad) {
		end--
	}
	return s[:end+1]
}

// addNgrams is libbleu's bleu_addngram for order n.
func (b *BLEU) addNgrams(n int, ref, pred []int32) {
	if len(pred) < n {
		return
	}
	b.Count[n-1] += len(pred) - n + 1
	if len(ref) < n {
		return
	}
	count := map[uint64]int{}
	for i := 0; i+n <= len(pred); i++ {
		count[ngramHash(pred[i:i+n])]++
	}
	for i := 0; i+n <= len(ref); i++ {
		if w := ngramHash(ref[i : i+n]); count[w] > 0 {
			b.Match[n-1]++
			count[w]--
		}
	}
}

// ngramHash is libbleu's bleu_hash: FNV-1a over the ids' bytes (int32,
// little-endian), each byte sign-extended as a C char is.
func ngramHash(ids []int32) uint64 {
	h := uint64(14695981039346656037)
	var buf [4]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint32(buf[:], uint32(id))
		for _, c := range buf {
			h ^= uint64(int64(int8(c)))
			h *= 0x100000001b3
		}
	}
	return h
}

// Precision is each order's matches over its count (0 for no count).
func (b *BLEU) Precision() [4]float64 {
	var p [4]float64
	for i := range p {
		if b.Count[i] > 0 {
			p[i] = float64(b.Match[i]) / float64(b.Count[i])
		}
	}
	return p
}

// Brevity is the brevity penalty, min(1, exp(1 - ref/pred)).
func (b *BLEU) Brevity() float64 {
	r := float64(b.RefLen) / float64(b.PredLen)
	return math.Min(1, math.Exp(1-r))
}

// Score is BLEU-4 times 100 (0 when an order has no match).
func (b *BLEU) Score() float64 {
	psum := 0.0
	for _, p := range b.Precision() {
		if p > 0 {
			psum += math.Log(p)
		} else {
			psum += math.Inf(-1)
		}
	}
	return b.Brevity() * math.Exp(psum/4) * 100
}

// String is Scorer.result_string(): "BLEU4 = S, p1/p2/p3/p4 (BP=..,
// ratio=.., syslen=N, reflen=M)".
func (b *BLEU) String() string {
	p := b.Precision()
	return fmt.Sprintf("BLEU4 = %2.2f, %2.1f/%2.1f/%2.1f/%2.1f (BP=%.3f, ratio=%.3f, syslen=%d, reflen=%d)",
		b.Score(), p[0]*100, p[1]*100, p[2]*100, p[3]*100, b.Brevity(), float64(b.PredLen)/float64(b.RefLen), b.PredLen, b.RefLen)
}
