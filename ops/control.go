package ops

import (
	"errors"
	"fmt"

	"github.com/attnx/attnx/builder"
)

// LoopBody builds the body of a Loop in b. It receives the iteration number
// (int64 scalar), the incoming condition (bool scalar) and the loop-carried
// values, and returns the condition for the next iteration (nil passes cond
// through), the carried values for the next iteration (as many as it
// received, each of the same element type and rank, and no fixed dimension
// that provably differs from the declared one) and any scan outputs,
// which the loop stacks along a new leading dimension.
type LoopBody func(b *builder.Graph, iter, cond *builder.Value, carried []*builder.Value) (condOut *builder.Value, carriedOut, scanOut []*builder.Value)

// LoopOpts holds the options of Loop.
type LoopOpts struct {
	// CarriedShapes gives, by position, the shape a carried value is declared
	// with inside the body; a nil entry (or a missing one) keeps the initial
	// value's shape. Values whose shape changes from one iteration to the
	// next need unknown or symbolic dimensions here.
	CarriedShapes []builder.Shape
}

// Loop adds an ONNX Loop in g that runs body while the iteration count is
// below maxTrip (an int64 scalar; nil: no limit) and the condition holds
// (cond, a bool scalar; nil: always true). It returns the final values of
// the carried values and the stacked scan outputs, whose leading dimension is
// maxTrip when that is a build-time constant and cond is nil, unknown
// otherwise.
//
// The body's inputs and outputs get deterministic names derived from a fresh
// "loop_N" prefix; the body may use any value visible in g.
func Loop(g *builder.Graph, maxTrip, cond *builder.Value, carried []*builder.Value, body LoopBody, opts LoopOpts) (final, scans []*builder.Value) {
	loopInputs := append([]*builder.Value{maxTrip, cond}, carried...)
	if g == nil || g.Err() != nil {
		return deadValues(g, "Loop", loopInputs, len(carried)), nil
	}
	for i, v := range carried {
		if v.Dead() {
			builder.Apply(builder.Call{Graph: g, Op: "Loop", Inputs: carried, Infer: func() ([]*builder.Type, error) {
				return nil, fmt.Errorf("carried value %d is nil", i)
			}}, 1)
			return deadValues(g, "Loop", loopInputs, len(carried)), nil
		}
	}
	base := g.UniqueName("loop")
	b := g.Sub(base + "_body")
	iter := b.Input(base+"_iter", builder.Int64, builder.Scalar())
	condIn := b.Input(base+"_cond", builder.Bool, builder.Scalar())
	in := make([]*builder.Value, len(carried))
	for i, v := range carried {
		shape := v.Shape()
		if i < len(opts.CarriedShapes) && opts.CarriedShapes[i] != nil {
			shape = opts.CarriedShapes[i]
		}
		in[i] = b.Input(fmt.Sprintf("%s_carried%d", base, i), v.Elem(), shape)
	}
	if g.Err() != nil {
		return deadValues(g, "Loop", loopInputs, len(carried)), nil
	}
	condOut, carriedOut, scanOut := body(b, iter, condIn, in)
	if condOut == nil {
		condOut = condIn
	}
	var bodyErr error
	if len(carriedOut) != len(carried) {
		bodyErr = fmt.Errorf("body returns %d carried values, want %d", len(carriedOut), len(carried))
	}
	for i, v := range carriedOut {
		if bodyErr != nil || v.Dead() {
			break
		}
		if v.Elem() != in[i].Elem() || v.Rank() != in[i].Rank() {
			bodyErr = fmt.Errorf("body returns %s for carried value %d, want %s", v.Type(), i, in[i].Type())
			break
		}
		for d, dim := range in[i].Shape() {
			if dim.Conflicts(v.Shape()[d]) {
				bodyErr = fmt.Errorf("body returns %s for carried value %d, declared %s: declare a shape that fits every iteration in LoopOpts.CarriedShapes", v.Type(), i, in[i].Type())
				break
			}
		}
	}
	if bodyErr == nil && !condOut.Dead() && (condOut.Elem() != builder.Bool || condOut.Rank() > 1) {
		bodyErr = fmt.Errorf("body returns condition %s, want a bool scalar", condOut.Type())
	}
	if bodyErr == nil {
		b.Output(base+"_cond_out", condOut)
		for i, v := range carriedOut {
			b.Output(fmt.Sprintf("%s_carried%d_out", base, i), v)
		}
		for i, v := range scanOut {
			b.Output(fmt.Sprintf("%s_scan%d_out", base, i), v)
		}
	}

	ins := append(operands{{"M", maxTrip}, {"cond", cond}}, numbered("v_initial", carried)...)
	n := len(carried) + len(scanOut)
	outs := builder.Apply(builder.Call{Graph: g, Op: "Loop", InputNames: ins.names(), Inputs: trimInputs(ins.values()),
		Attrs: []builder.Attr{builder.GraphAttr("body", b)},
		Infer: func() ([]*builder.Type, error) {
			if bodyErr != nil {
				return nil, bodyErr
			}
			if maxTrip != nil {
				if err := checkElem("M", maxTrip, int64Types); err != nil {
					return nil, err
				}
				if err := checkRank("M", maxTrip, 0, 1); err != nil {
					return nil, err
				}
			}
			if cond != nil {
				if err := checkElem("cond", cond, boolTypes); err != nil {
					return nil, err
				}
				if err := checkRank("cond", cond, 0, 1); err != nil {
					return nil, err
				}
			}
			trips := builder.UnknownDim()
			if m, ok := constInts(maxTrip); ok && cond == nil && len(m) == 1 {
				trips = builder.D(m[0])
			}
			types := make([]*builder.Type, 0, n)
			for _, v := range in {
				t := v.Type()
				types = append(types, &t)
			}
			for i, v := range scanOut {
				if v.Dead() {
					return nil, fmt.Errorf("scan output %d is missing", i)
				}
				var s builder.Shape
				if v.Shape() != nil {
					s = append(builder.Shape{trips}, v.Shape()...)
				}
				types = append(types, &builder.Type{Elem: v.Elem(), Shape: s})
			}
			return types, nil
		}}, max(n, 1))
	if n == 0 {
		return nil, nil
	}
	return outs[:len(carried)], outs[len(carried):]
}

// IfBranch builds one branch of an If in b and returns its outputs.
type IfBranch func(b *builder.Graph) []*builder.Value

// If adds an ONNX If in g that computes thenBranch's outputs when cond (a
// bool scalar) is true and elseBranch's otherwise. Both branches must return
// as many values, with the same element types; an output's dimensions are
// kept where the branches agree and unknown where they differ.
func If(g *builder.Graph, cond *builder.Value, thenBranch, elseBranch IfBranch) []*builder.Value {
	if g == nil || g.Err() != nil {
		return deadValues(g, "If", []*builder.Value{cond}, 1)
	}
	base := g.UniqueName("if")
	thenG, elseG := g.Sub(base+"_then"), g.Sub(base+"_else")
	thenOut := thenBranch(thenG)
	elseOut := elseBranch(elseG)
	var branchErr error
	if len(thenOut) != len(elseOut) {
		branchErr = fmt.Errorf("then branch returns %d values but else branch %d", len(thenOut), len(elseOut))
	} else if len(thenOut) == 0 {
		branchErr = errors.New("branches return no values")
	}
	types := make([]*builder.Type, len(thenOut))
	for i := range thenOut {
		if branchErr != nil {
			break
		}
		t, e := thenOut[i], elseOut[i]
		if t.Dead() || e.Dead() {
			break
		}
		if t.Elem() != e.Elem() {
			branchErr = fmt.Errorf("output %d is %s in the then branch but %s in the else branch", i, t.Type(), e.Type())
			break
		}
		var s builder.Shape
		if t.Rank() >= 0 && t.Rank() == e.Rank() {
			s = t.Shape().Clone()
			for d := range s {
				if !s[d].Same(e.Shape()[d]) {
					s[d] = builder.UnknownDim()
				}
			}
		}
		types[i] = &builder.Type{Elem: t.Elem(), Shape: s}
	}
	if branchErr == nil {
		for i := range thenOut {
			thenG.Output(fmt.Sprintf("%s_then_out%d", base, i), thenOut[i])
			elseG.Output(fmt.Sprintf("%s_else_out%d", base, i), elseOut[i])
		}
	}
	ins := operands{{"cond", cond}}
	return builder.Apply(builder.Call{Graph: g, Op: "If", InputNames: ins.names(), Inputs: ins.values(),
		Attrs: []builder.Attr{builder.GraphAttr("else_branch", elseG), builder.GraphAttr("then_branch", thenG)},
		Infer: func() ([]*builder.Type, error) {
			if branchErr != nil {
				return nil, branchErr
			}
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("cond", cond, boolTypes); err != nil {
				return nil, err
			}
			if err := checkRank("cond", cond, 0, 1); err != nil {
				return nil, err
			}
			return types, nil
		}}, max(len(thenOut), 1))
}

// deadValues returns n placeholder values for an op (If or Loop) that
// cannot be added to g, because g is nil or has failed. A nil g is
// recorded as op's error in the graph of its inputs, when they have one;
// a failed g already holds its first error, which stays.
func deadValues(g *builder.Graph, op string, inputs []*builder.Value, n int) []*builder.Value {
	return builder.Apply(builder.Call{Graph: g, Op: op, Inputs: inputs, Infer: func() ([]*builder.Type, error) {
		return nil, errors.New("the graph to add it to is nil")
	}}, max(n, 1))[:n]
}
