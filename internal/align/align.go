// Package align makes hard alignments from attention: for each target
// token, the source position it attends to most. It is the one
// implementation behind fairseq-generate's A- lines (fairseqgen) and the
// "alignment" of attnx's JSON results (translate).
package align

import "fmt"

// Pair is one link of a hard alignment: Src is the source position, Tgt
// the target position, each counted among the positions the alignment
// keeps (those its skip masks do not mark).
type Pair struct {
	Src, Tgt int
}

// Hard returns, for each target row of attn not marked in skipTgt, in
// order, the kept source column with the largest weight (the first of
// equal weights, as torch's max takes it). A column past the end of a row
// weighs 0. skipSrc marks the source columns to leave out and sets how
// many columns there are; skipTgt, one per row of attn, the rows to leave
// out (nil: none). The result is empty, not an error, when every source
// column is marked.
func Hard(attn [][]float32, skipSrc, skipTgt []bool) ([]Pair, error) {
	if skipTgt != nil && len(skipTgt) != len(attn) {
		return nil, fmt.Errorf("align: %d target marks for %d attention rows: expected one per row", len(skipTgt), len(attn))
	}
	// word[k]: the position of source column k among the kept ones.
	word := make([]int, len(skipSrc))
	n := 0
	for k, skip := range skipSrc {
		word[k] = n
		if !skip {
			n++
		}
	}
	if n == 0 {
		return []Pair{}, nil
	}
	pairs := []Pair{}
	t := 0
	for i, row := range attn {
		if skipTgt != nil && skipTgt[i] {
			continue
		}
		weight := func(k int) float32 {
			if k < len(row) {
				return row[k]
			}
			return 0
		}
		best := -1
		for k, skip := range skipSrc {
			if !skip && (best < 0 || weight(k) > weight(best)) {
				best = k
			}
		}
		pairs = append(pairs, Pair{Src: word[best], Tgt: t})
		t++
	}
	return pairs, nil
}
