package ops

import (
	"fmt"

	"github.com/attnx/attnx/builder"
)

// RNNOpts holds the attributes and optional inputs shared by LSTM and GRU.
type RNNOpts struct {
	// B is the bias, [num_directions, 8*hidden] for LSTM (Wb then Rb),
	// [num_directions, 6*hidden] for GRU; nil means zero.
	B *builder.Value
	// SequenceLens is an int32 [batch] tensor of sequence lengths; nil means
	// every sequence has the full length.
	SequenceLens *builder.Value
	// InitialH is the initial hidden state, [num_directions, batch, hidden]
	// (layout 0) or [batch, num_directions, hidden] (layout 1); nil means zero.
	InitialH *builder.Value

	// HiddenSize is the number of hidden units; 0 takes it from R's last
	// dimension (the attribute is then written with that value).
	HiddenSize int64
	// Direction is "forward" (the default when empty), "reverse" or
	// "bidirectional".
	Direction string
	// Layout 0 (the default) is sequence-first: X is [seq, batch, input]; 1
	// is batch-first: X is [batch, seq, input].
	Layout int64
	// Activations names the activation functions (3 per direction for LSTM,
	// 2 for GRU); nil means the defaults (Sigmoid, Tanh[, Tanh]).
	Activations []string
	// ActivationAlpha and ActivationBeta are the activation parameters.
	ActivationAlpha, ActivationBeta []float32
	// Clip, when set, clips the cell input to [-Clip, Clip].
	Clip *float32

	// OmitY and OmitYH leave the Y and Y_h outputs out of the node (the
	// returned values are then nil).
	OmitY, OmitYH bool
}

// LSTMOpts holds the optional inputs and attributes of LSTM.
type LSTMOpts struct {
	RNNOpts
	// InitialC is the initial cell state, shaped like InitialH; nil means zero.
	InitialC *builder.Value
	// P is the peephole weights [num_directions, 3*hidden]; nil means none.
	P *builder.Value
	// InputForget couples the input and forget gates.
	InputForget bool
	// OmitYC leaves the Y_c output out of the node.
	OmitYC bool
}

// GRUOpts holds the optional inputs and attributes of GRU.
type GRUOpts struct {
	RNNOpts
	// LinearBeforeReset applies the linear transformation before multiplying
	// by the reset gate's output.
	LinearBeforeReset bool
}

var rnnActivations = map[string]bool{
	"Relu": true, "Tanh": true, "Sigmoid": true, "Affine": true, "LeakyRelu": true,
	"ThresholdedRelu": true, "ScaledTanh": true, "HardSigmoid": true, "Elu": true,
	"Softsign": true, "Softplus": true,
}

// rnnAttrs returns the common attributes, in the schema's terms.
func (o RNNOpts) attrs(hidden int64) []builder.Attr {
	var attrs []builder.Attr
	if hidden > 0 {
		attrs = append(attrs, builder.IntAttr("hidden_size", hidden))
	}
	if o.Direction != "" && o.Direction != "forward" {
		attrs = append(attrs, builder.StringAttr("direction", o.Direction))
	}
	if o.Layout != 0 {
		attrs = append(attrs, builder.IntAttr("layout", o.Layout))
	}
	if o.Activations != nil {
		attrs = append(attrs, builder.StringsAttr("activations", o.Activations))
	}
	if o.ActivationAlpha != nil {
		attrs = append(attrs, builder.FloatsAttr("activation_alpha", o.ActivationAlpha))
	}
	if o.ActivationBeta != nil {
		attrs = append(attrs, builder.FloatsAttr("activation_beta", o.ActivationBeta))
	}
	if o.Clip != nil {
		attrs = append(attrs, builder.FloatAttr("clip", *o.Clip))
	}
	return attrs
}

// hiddenFrom returns the hidden size: the attribute, or R's last dimension.
func (o RNNOpts) hiddenFrom(r *builder.Value) int64 {
	if o.HiddenSize > 0 {
		return o.HiddenSize
	}
	if r != nil && r.Rank() == 3 && r.Shape()[2].Known() {
		return r.Shape()[2].Value
	}
	return 0
}

// rnnInfer checks the inputs of LSTM (gates=4) or GRU (gates=3; initialC
// and p are then nil) and returns the shapes of Y and of the Y_h/Y_c state
// outputs.
func rnnInfer(x, w, r *builder.Value, o RNNOpts, initialC, p *builder.Value, hidden int64, gates int64) (y, state builder.Shape, err error) {
	xIn := operand{"X", x}
	if err := required(xIn, operand{"W", w}, operand{"R", r}); err != nil {
		return nil, nil, err
	}
	if err := checkElem("X", x, rnnTypes); err != nil {
		return nil, nil, err
	}
	if err := sameElem(xIn, operand{"W", w}, operand{"R", r}, operand{"B", o.B},
		operand{"initial_h", o.InitialH}, operand{"initial_c", initialC}, operand{"P", p}); err != nil {
		return nil, nil, err
	}
	if hidden <= 0 {
		return nil, nil, fmt.Errorf("hidden_size is %d and cannot be taken from R (%s): set HiddenSize", o.HiddenSize, r.Type())
	}
	numDir := int64(1)
	switch o.Direction {
	case "", "forward", "reverse":
	case "bidirectional":
		numDir = 2
	default:
		return nil, nil, fmt.Errorf("direction %q is not one of forward, reverse, bidirectional", o.Direction)
	}
	if o.Layout != 0 && o.Layout != 1 {
		return nil, nil, fmt.Errorf("layout is %d, want 0 or 1", o.Layout)
	}
	perDir := int(gates) - 1
	if o.Activations != nil {
		if len(o.Activations) != perDir*int(numDir) {
			return nil, nil, fmt.Errorf("activations %v: want %d (%d per direction)", o.Activations, perDir*int(numDir), perDir)
		}
		for _, a := range o.Activations {
			if !rnnActivations[a] {
				return nil, nil, fmt.Errorf("activation %q is not supported by ONNX recurrent operators", a)
			}
		}
	}
	if o.Clip != nil && *o.Clip <= 0 {
		return nil, nil, fmt.Errorf("clip is %g, want a positive threshold", *o.Clip)
	}
	for _, v := range []struct {
		operand
		rank int
	}{{xIn, 3}, {operand{"W", w}, 3}, {operand{"R", r}, 3}, {operand{"B", o.B}, 2}, {operand{"sequence_lens", o.SequenceLens}, 1},
		{operand{"initial_h", o.InitialH}, 3}, {operand{"initial_c", initialC}, 3}, {operand{"P", p}, 2}} {
		if v.v != nil {
			if err := checkRank(v.name, v.v, v.rank); err != nil {
				return nil, nil, err
			}
		}
	}
	if o.SequenceLens != nil {
		if err := checkElem("sequence_lens", o.SequenceLens, typeSet{builder.Int32}); err != nil {
			return nil, nil, err
		}
	}
	seq, batch, input := builder.UnknownDim(), builder.UnknownDim(), builder.UnknownDim()
	if s := x.Shape(); s != nil {
		if o.Layout == 0 {
			seq, batch = s[0], s[1]
		} else {
			batch, seq = s[0], s[1]
		}
		input = s[2]
	}
	nd, h := builder.D(numDir), builder.D(hidden)
	// want checks a value's dims against the expected ones.
	want := func(name string, v *builder.Value, dims ...builder.Dim) error {
		if v == nil || v.Shape() == nil {
			return nil
		}
		for i, d := range dims {
			m, ok := mergeDim(v.Shape()[i], d)
			if !ok {
				return fmt.Errorf("%s is %s, want %s", name, v.Type(), builder.Shape(dims))
			}
			if name == "X" || name == "sequence_lens" || name == "initial_h" || name == "initial_c" {
				dims[i] = m
			}
		}
		return nil
	}
	if err := want("W", w, nd, builder.D(gates*hidden), input); err != nil {
		return nil, nil, err
	}
	if w.Shape() != nil && !input.Known() && w.Shape()[2].Known() {
		input = w.Shape()[2]
	}
	if err := want("R", r, nd, builder.D(gates*hidden), h); err != nil {
		return nil, nil, err
	}
	if err := want("B", o.B, nd, builder.D(2*gates*hidden)); err != nil {
		return nil, nil, err
	}
	lens := []builder.Dim{batch}
	if err := want("sequence_lens", o.SequenceLens, lens...); err != nil {
		return nil, nil, err
	}
	batch = lens[0]
	for _, state := range []operand{{"initial_h", o.InitialH}, {"initial_c", initialC}} {
		name, v := state.name, state.v
		dims := []builder.Dim{nd, batch, h}
		if o.Layout == 1 {
			dims = []builder.Dim{batch, nd, h}
		}
		if err := want(name, v, dims...); err != nil {
			return nil, nil, err
		}
		if o.Layout == 0 {
			batch = dims[1]
		} else {
			batch = dims[0]
		}
	}
	if err := want("P", p, nd, builder.D(3*hidden)); err != nil {
		return nil, nil, err
	}
	if o.Layout == 0 {
		return builder.Shape{seq, nd, batch, h}, builder.Shape{nd, batch, h}, nil
	}
	return builder.Shape{batch, seq, nd, h}, builder.Shape{batch, nd, h}, nil
}

// LSTM runs a long short-term memory layer over the sequence X (ONNX LSTM,
// opset 14). W is [num_directions, 4*hidden, input] and R [num_directions,
// 4*hidden, hidden], gates in the order i, o, f, c. It returns Y (all hidden
// states: [seq, num_directions, batch, hidden] for layout 0, [batch, seq,
// num_directions, hidden] for layout 1), Y_h and Y_c (the last hidden and
// cell states: [num_directions, batch, hidden], or [batch, num_directions,
// hidden] for layout 1). Outputs omitted through opts are nil.
func LSTM(x, w, r *builder.Value, opts LSTMOpts) (y, yh, yc *builder.Value) {
	hidden := opts.hiddenFrom(r)
	attrs := opts.attrs(hidden)
	if opts.InputForget {
		attrs = append(attrs, builder.IntAttr("input_forget", 1))
	}
	ins := operands{{"X", x}, {"W", w}, {"R", r}, {"B", opts.B}, {"sequence_lens", opts.SequenceLens},
		{"initial_h", opts.InitialH}, {"initial_c", opts.InitialC}, {"P", opts.P}}
	outs := builder.Apply(builder.Call{Op: "LSTM", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			ys, ss, err := rnnInfer(x, w, r, opts.RNNOpts, opts.InitialC, opts.P, hidden, 4)
			if err != nil {
				return nil, err
			}
			if opts.OmitY && opts.OmitYH && opts.OmitYC {
				return nil, fmt.Errorf("all outputs are omitted")
			}
			return rnnOutputs(x.Elem(), ys, ss, !opts.OmitY, !opts.OmitYH, !opts.OmitYC), nil
		}}, 3)
	return outs[0], outs[1], outs[2]
}

// GRU runs a gated recurrent unit layer over the sequence X (ONNX GRU,
// opset 14). W is [num_directions, 3*hidden, input] and R [num_directions,
// 3*hidden, hidden], gates in the order z, r, h. It returns Y and Y_h, shaped
// as for LSTM. Outputs omitted through opts are nil.
func GRU(x, w, r *builder.Value, opts GRUOpts) (y, yh *builder.Value) {
	hidden := opts.hiddenFrom(r)
	attrs := opts.attrs(hidden)
	if opts.LinearBeforeReset {
		attrs = append(attrs, builder.IntAttr("linear_before_reset", 1))
	}
	ins := operands{{"X", x}, {"W", w}, {"R", r}, {"B", opts.B}, {"sequence_lens", opts.SequenceLens}, {"initial_h", opts.InitialH}}
	outs := builder.Apply(builder.Call{Op: "GRU", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			ys, ss, err := rnnInfer(x, w, r, opts.RNNOpts, nil, nil, hidden, 3)
			if err != nil {
				return nil, err
			}
			if opts.OmitY && opts.OmitYH {
				return nil, fmt.Errorf("all outputs are omitted")
			}
			return rnnOutputs(x.Elem(), ys, ss, !opts.OmitY, !opts.OmitYH), nil
		}}, 2)
	return outs[0], outs[1]
}

// rnnOutputs returns Y and the state outputs, nil where not wanted.
func rnnOutputs(elem builder.DataType, y, state builder.Shape, want ...bool) []*builder.Type {
	out := make([]*builder.Type, len(want))
	for i, w := range want {
		if !w {
			continue
		}
		s := state
		if i == 0 {
			s = y
		}
		out[i] = &builder.Type{Elem: elem, Shape: s.Clone()}
	}
	return out
}

// trimInputs drops trailing omitted inputs, as ONNX writes them.
func trimInputs(in []*builder.Value) []*builder.Value {
	n := len(in)
	for n > 0 && in[n-1] == nil {
		n--
	}
	return in[:n]
}
