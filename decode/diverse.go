package decode

import (
	"fmt"
	"math"
)

// fairseq 0.12's searches besides BeamSearch and Sampling
// (fairseq/search.py), as its build_generator picks them
// (fairseq/tasks/fairseq_task.py): FairseqBeam runs them with its
// generator's other rules (candidates, </s>, cands_to_ignore, the length
// normalisation) unchanged.
//
//   - MatchSourceLen, --match-source-len: LengthConstrainedBeamSearch
//     with min and max length the source's (min_len_a = max_len_a = 1,
//     b = 0): before step SrcLen </s> is banned, from it on its log-prob
//     is 0; a hypothesis that ends past step SrcLen is kept with the
//     normalised score -inf (finalize_hypos). The generator's limit is
//     then the longest source of the batch (MaxLen = that + 1), not
//     --max-len-a/b.
//   - Groups, --diverse-beam-groups G --diverse-beam-strength S
//     (DiverseBeamSearch, Vijayakumar et al. 2016): the live hypotheses
//     in slots g, g+G, g+2G, ... are group g, each group a beam of K/G
//     (at the first step each group starts from the one hypothesis);
//     group g's log-probs get -S x the times each token is among the
//     candidates of groups 0 to g-1 this step, each group picks its
//     2K/G best, and the candidates are interleaved (the first of each
//     group, then the second of each, ...). The penalty stays in the
//     scores, as fairseq's do. The next step's groups are the slots the
//     generator gives the survivors, not the groups they came from, as
//     in fairseq.
//   - Siblings, --diversity-rate R (DiverseSiblingsSearch, Li et al.
//     2016): from the second step, each hypothesis' 2K best tokens, the
//     j-th of them (from 1) less j x R, and of all those the 2K best; the
//     first step is the beam's.
type diverseState struct {
	count []float32       // the tokens' counts over the earlier groups' candidates
	lps   [][]float32     // each live hypothesis' prepared log-probs
	group [][]fairseqCand // each group's candidates
	out   []fairseqCand
}

// validateDiverse checks the diverse settings.
func (b *FairseqBeam) validateDiverse() error {
	n := 0
	for _, on := range []bool{b.Sampling, b.Groups > 0, b.MatchSourceLen, b.Siblings} {
		if on {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("decode: sampling, diverse beam groups %d, match source len %v, diversity rate (siblings %v): at most one of them (fairseq: \"Provided Search parameters are mutually exclusive\")", b.Groups, b.MatchSourceLen, b.Siblings)
	case b.Groups < 0 || b.Groups > 0 && b.K%b.Groups != 0:
		return fmt.Errorf("decode: diverse beam groups %d with beam %d: want groups that divide the beam (fairseq: \"DiverseBeamSearch requires --beam to be divisible by the number of groups\")", b.Groups, b.K)
	case math.IsNaN(b.GroupStrength) || math.IsInf(b.GroupStrength, 0):
		return fmt.Errorf("decode: diverse beam strength %v: want a finite value", b.GroupStrength)
	case math.IsNaN(b.DiversityRate) || math.IsInf(b.DiversityRate, 0):
		return fmt.Errorf("decode: diversity rate %v: want a finite value", b.DiversityRate)
	case b.MatchSourceLen && b.SrcLen < 0:
		return fmt.Errorf("decode: source length %d: want at least 0", b.SrcLen)
	}
	return nil
}

// matchSourceLen is LengthConstrainedBeamSearch's rule on a hypothesis'
// prepared log-probs at step: no </s> before step srcLen, </s> at
// log-prob 0 from it on.
func matchSourceLen(lp []float32, step, srcLen int, eos int64) {
	if eos < 0 || int(eos) >= len(lp) {
		return
	}
	if step < srcLen {
		lp[eos] = float32(math.Inf(-1))
	} else {
		lp[eos] = 0
	}
}

// diverseCands prepares the live hypotheses' log-probs and returns the
// step's candidates as DiverseBeamSearch (Groups) or DiverseSiblingsSearch
// (Siblings) gives them to the generator.
func (b *FairseqBeam) diverseCands(s Slots, step, last int) []fairseqCand {
	d := &b.div
	d.lps = d.lps[:0]
	for i := range b.live {
		d.lps = append(d.lps, b.prepare(s.LogProbs(i), step, last))
	}
	if b.Groups > 0 {
		return b.groupCands(step)
	}
	return b.siblingCands()
}

// groupCands is DiverseBeamSearch.step over the prepared log-probs.
func (b *FairseqBeam) groupCands(step int) []fairseqCand {
	d := &b.div
	G, V := b.Groups, len(d.lps[0])
	if cap(d.count) < V {
		d.count = make([]float32, V)
	}
	d.count = d.count[:V]
	clear(d.count)
	for len(d.group) < G {
		d.group = append(d.group, nil)
	}
	alpha := float32(-b.GroupStrength)
	n := 0
	for g := range G {
		// The group's hypotheses: slots g, g+G, ...; at the first step
		// the one hypothesis (BeamSearch's lprobs[:, ::beam_size]).
		var members []int
		if step == 0 {
			members = []int{0}
		} else {
			for i := g; i < len(b.live); i += G {
				members = append(members, i)
			}
		}
		bg := b.k / G
		b.sel.reset(min(2*bg, len(members)*V-1), fairseqOrder)
		for j, i := range members {
			lp, score := d.lps[i], b.live[i].score
			for v, x := range lp {
				if g > 0 && d.count[v] != 0 {
					// torch.add(lprobs_g, diversity_buf, alpha=-S): one fused
					// multiply-add in float32.
					x = float32(math.FMA(float64(alpha), float64(d.count[v]), float64(x)))
				}
				b.sel.push(fairseqCand{score: x + score, i: int32(i), v: int32(v), flat: int64(j)*int64(V) + int64(v)})
			}
		}
		d.group[g] = append(d.group[g][:0], b.sel.result()...)
		n = len(d.group[g])
		for _, c := range d.group[g] {
			d.count[c.v]++
		}
	}
	// torch.stack(..., dim=2).view(bsz, -1): candidate j of each group in
	// turn.
	d.out = d.out[:0]
	for j := range n {
		for g := range G {
			d.out = append(d.out, d.group[g][j])
		}
	}
	return d.out
}

// siblingCands is DiverseSiblingsSearch.step (after the first step) over
// the prepared log-probs.
func (b *FairseqBeam) siblingCands() []fairseqCand {
	d := &b.div
	V := len(d.lps[0])
	// k = min(2 x beam, beam x V - 1), each hypothesis' topk of k over its
	// V tokens (at most V).
	k := min(2*b.k, len(b.live)*V-1)
	kh := min(k, V)
	rate := float32(b.DiversityRate)
	d.out = d.out[:0]
	for i, lp := range d.lps {
		score := b.live[i].score
		b.sel.reset(kh, fairseqOrder)
		for v, x := range lp {
			b.sel.push(fairseqCand{score: x + score, i: int32(i), v: int32(v), flat: int64(v)})
		}
		for j, c := range b.sel.result() {
			// s_list[i] - arange(1, k+1) * rate, in float32.
			c.score -= float32(j+1) * rate
			c.flat = int64(i)*int64(kh) + int64(j)
			d.out = append(d.out, c)
		}
	}
	b.sel.reset(k, fairseqOrder)
	for _, c := range d.out {
		b.sel.push(c)
	}
	return b.sel.result()
}
