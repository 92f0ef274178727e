package attention

import (
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// Rules are a toolkit's decoding rules beyond the spec's argmax and beam
// search: tokens its search never chooses and a first step at which it
// may end. JoeyNMT 2.x's searches have them (2.3's never choose <s> or
// <pad>, nor <unk> with generate_unk false, and none ends at the first
// step); the other toolkits have none. The decoding core, greedy.onnx
// and beam.onnx apply them by giving those tokens' log-probs -Inf before
// choosing.
type Rules struct {
	// Greedy and Beam list the target ids greedy decoding and beam search
	// never choose.
	Greedy []int64 `json:"greedy_banned,omitempty"`
	Beam   []int64 `json:"beam_banned,omitempty"`
	// EOSFromStep is the first step (0-based) at which EOS may be chosen:
	// JoeyNMT's min_output_length, 1 by default.
	EOSFromStep int `json:"eos_from_step,omitempty"`
	// Origin names whose rules these are, for people.
	Origin string `json:"origin,omitempty"`
}

// Check reports an id outside the target vocabulary or a negative step.
func (r *Rules) Check(c Config) error {
	if r == nil {
		return nil
	}
	for _, l := range []struct {
		name string
		ids  []int64
	}{{"greedy_banned", r.Greedy}, {"beam_banned", r.Beam}} {
		for _, id := range l.ids {
			if id < 0 || id >= int64(c.TgtVocab) {
				return fmt.Errorf("%s holds id %d, outside the target vocabulary [0, %d)", l.name, id, c.TgtVocab)
			}
		}
	}
	if r.EOSFromStep < 0 {
		return fmt.Errorf("eos_from_step %d: must be at least 0", r.EOSFromStep)
	}
	return nil
}

// Banned lists the ids the search never chooses: the beam's when beam is
// set, else greedy decoding's.
func (r *Rules) Banned(beam bool) []int64 {
	if r == nil {
		return nil
	}
	if beam {
		return r.Beam
	}
	return r.Greedy
}

// Apply gives the banned tokens of one row's log-probs -Inf, and EOS too
// before EOSFromStep; step is the 0-based step the row is at. A nil Rules
// changes nothing.
func (r *Rules) Apply(row []float32, step int, eos int64, beam bool) {
	if r == nil {
		return
	}
	inf := float32(math.Inf(-1))
	for _, id := range r.Banned(beam) {
		if int(id) < len(row) {
			row[id] = inf
		}
	}
	if step < r.EOSFromStep && int(eos) < len(row) {
		row[eos] = inf
	}
}

// applyRules is Apply inside a graph: logProbs [batch, Vt] at the step
// iter (an int64 scalar, the Loop's iteration number).
func (s *modelGraph) applyRules(r *Rules, logProbs, iter *builder.Value, eos int64, beam bool) *builder.Value {
	if r == nil {
		return logProbs
	}
	V := s.cfg.TgtVocab
	mask := make([]bool, V)
	for _, id := range r.Banned(beam) {
		mask[id] = true
	}
	negInf := s.c.scalarFloat(float32(math.Inf(-1)))
	out := logProbs
	if len(r.Banned(beam)) > 0 {
		m := s.g.Init("", builder.BoolTensor([]int64{int64(V)}, mask))
		out = ops.Where(m, negInf, out)
	}
	if r.EOSFromStep > 0 {
		eosMask := make([]bool, V)
		eosMask[eos] = true
		early := ops.Less(iter, s.c.scalarInt(int64(r.EOSFromStep)))
		m := ops.And(s.g.Init("", builder.BoolTensor([]int64{int64(V)}, eosMask)), early)
		out = ops.Where(m, negInf, out)
	}
	return out
}
