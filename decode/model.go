package decode

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/onnxrun"
)

// NextPrefix names a recurrent state's output after its input: hidden ->
// next_hidden, cell -> next_cell (the spec's ONNX interface, and the
// reference's tensors).
const NextPrefix = attention.NextPrefix

// Model is a pair of opened graphs of the spec's interface, encoder.onnx and
// decoder.onnx, with what the executor needs to know about them. The
// recurrent states are discovered from the decoder's inputs: every input
// other than input_ids, encoder_outputs and source_lengths is a state
// [rows, batch, width] with a matching "next_" output and an encoder output
// of the same name (hidden -> next_hidden for every cell, cell -> next_cell
// only for LSTMs, input_feed -> next_input_feed with input feeding). The
// executor carries, reorders and batches them without knowing what they
// mean. A Model is read-only and may be shared by many Executors.
type Model struct {
	enc, dec *onnxrun.Session
	states   []string // decoder state inputs, in the decoder's input order
	shapes   []attention.StateSpec
	width    int // C, the encoder outputs' size
	vocab    int // Vt
	copy     bool
}

// Dims are sizes the caller may know from attnx.json; a zero field is taken
// from the graphs' declarations, a non-zero one must agree with them.
type Dims struct {
	// EncoderWidth is C, encoder_outputs' last dimension.
	EncoderWidth int
	// States are the recurrent states' shapes, by name.
	States []attention.StateSpec
	// TgtVocab is Vt.
	TgtVocab int
}

// NewModel checks that enc and dec have the spec's inputs and outputs,
// discovers the recurrent states and reads H, L and Vt. The sessions stay the
// caller's to close, after every Executor of the Model is closed.
func NewModel(enc, dec *onnxrun.Session, known Dims) (*Model, error) {
	m := &Model{enc: enc, dec: dec}
	ins, outs := byName(dec.Inputs()), byName(dec.Outputs())
	encOuts := byName(enc.Outputs())
	encIns := byName(enc.Inputs())
	var missing []string
	need := func(set map[string]onnxrun.IOInfo, what string, names ...string) {
		for _, n := range names {
			if _, ok := set[n]; !ok {
				missing = append(missing, fmt.Sprintf("%s %q", what, n))
			}
		}
	}
	need(encIns, "encoder input", attention.InSourceIDs, attention.InSourceLengths)
	need(encOuts, "encoder output", attention.OutEncoder)
	need(ins, "decoder input", attention.InInputIDs, attention.InEncoderOutputs, attention.InSourceLengths)
	need(outs, "decoder output", attention.OutLogProbs, attention.OutAttention)
	if len(missing) > 0 {
		return nil, fmt.Errorf("decode: the graphs lack %s (see the spec's ONNX interface)", strings.Join(missing, ", "))
	}
	for _, in := range dec.Inputs() {
		switch in.Name {
		case attention.InInputIDs, attention.InEncoderOutputs, attention.InSourceLengths:
			continue
		}
		if _, ok := outs[NextPrefix+in.Name]; !ok {
			return nil, fmt.Errorf("decode: decoder input %q has no output %q: a recurrent state needs both", in.Name, NextPrefix+in.Name)
		}
		if _, ok := encOuts[in.Name]; !ok {
			return nil, fmt.Errorf("decode: decoder state %q has no encoder output of that name to start from", in.Name)
		}
		m.states = append(m.states, in.Name)
	}
	if len(m.states) == 0 {
		return nil, fmt.Errorf("decode: the decoder has no recurrent state input (want %q, %q for an LSTM, %q with input feeding)", attention.InHidden, attention.InCell, attention.InInputFeed)
	}
	// Every output gets bound, so every one must be known.
	isState := map[string]bool{}
	for _, st := range m.states {
		isState[st] = true
	}
	for _, o := range dec.Outputs() {
		st, isNext := strings.CutPrefix(o.Name, NextPrefix)
		if o.Name == attention.OutCopyProbs {
			m.copy = true
			continue
		}
		if o.Name != attention.OutLogProbs && o.Name != attention.OutAttention && !(isNext && isState[st]) {
			return nil, fmt.Errorf("decode: decoder output %q is not part of the interface (log_probs, attention, copy_probs and next_STATE for each state input)", o.Name)
		}
	}
	for _, o := range enc.Outputs() {
		if o.Name != attention.OutEncoder && !isState[o.Name] {
			return nil, fmt.Errorf("decode: encoder output %q is not part of the interface (encoder_outputs and the decoder's state inputs %v)", o.Name, m.states)
		}
	}

	// Sizes: every declared fixed dimension must agree, with the caller's
	// too; at least one declaration (or the caller) must give each size.
	type size struct {
		name string
		v    *int
		from []dimRef
	}
	sizes := []size{
		{"encoder output size", &m.width, []dimRef{{encOuts[attention.OutEncoder], 2}, {ins[attention.InEncoderOutputs], 2}}},
		{"target vocabulary Vt", &m.vocab, []dimRef{{outs[attention.OutLogProbs], 1}}},
	}
	m.width, m.vocab = known.EncoderWidth, known.TgtVocab
	m.shapes = make([]attention.StateSpec, len(m.states))
	for k, st := range m.states {
		m.shapes[k].Name = st
		for _, ks := range known.States {
			if ks.Name == st {
				m.shapes[k] = ks
			}
		}
		rows := size{fmt.Sprintf("rows of state %s", st), &m.shapes[k].Rows, nil}
		width := size{fmt.Sprintf("width of state %s", st), &m.shapes[k].Width, nil}
		for _, io := range []onnxrun.IOInfo{ins[st], outs[NextPrefix+st], encOuts[st]} {
			rows.from = append(rows.from, dimRef{io, 0})
			width.from = append(width.from, dimRef{io, 2})
		}
		sizes = append(sizes, rows, width)
	}
	for _, sz := range sizes {
		for _, d := range sz.from {
			v, ok := d.fixed()
			if !ok {
				continue
			}
			if *sz.v != 0 && *sz.v != v {
				return nil, fmt.Errorf("decode: %s %s fixes the %s at %d, but it is %d elsewhere", d.io.Name, d.io, sz.name, v, *sz.v)
			}
			*sz.v = v
		}
		if *sz.v <= 0 {
			return nil, fmt.Errorf("decode: the graphs do not declare the %s; pass it in Dims", sz.name)
		}
	}
	return m, nil
}

// dimRef is one dimension of one declared input or output.
type dimRef struct {
	io  onnxrun.IOInfo
	dim int
}

func (d dimRef) fixed() (int, bool) {
	if !d.io.RankKnown || d.dim >= len(d.io.Shape) || d.io.Shape[d.dim] < 0 {
		return 0, false
	}
	return int(d.io.Shape[d.dim]), true
}

func byName(infos []onnxrun.IOInfo) map[string]onnxrun.IOInfo {
	m := make(map[string]onnxrun.IOInfo, len(infos))
	for _, io := range infos {
		m[io.Name] = io
	}
	return m
}

// States returns the names of the recurrent states, in the decoder's input
// order: ["hidden", "cell"] for an LSTM, ["hidden"] for a GRU.
func (m *Model) States() []string { return append([]string(nil), m.states...) }

// StateShapes returns the recurrent states' shapes, in the order of States:
// each is [Rows, batch, Width].
func (m *Model) StateShapes() []attention.StateSpec {
	return append([]attention.StateSpec(nil), m.shapes...)
}

// EncoderWidth returns C, the size of each encoder output.
func (m *Model) EncoderWidth() int { return m.width }

// stateSize is the number of floats state k holds for b slots.
func (m *Model) stateSize(k, b int) int { return m.shapes[k].Rows * b * m.shapes[k].Width }

// TgtVocab returns Vt.
func (m *Model) TgtVocab() int { return m.vocab }

// Copy reports whether the decoder has copy attention (a copy_probs
// output): its rows then decode over each sentence's extended vocabulary
// (CopyMap).
func (m *Model) Copy() bool { return m.copy }

// Bytes returns the memory an Executor holds when sized for slots slots and
// cells slot-positions (slots times the padded source length): the figure
// the capacity-based pools of package translate and of a scheduler budget
// with. Buffers for rows joining a non-empty batch come on top (see
// Executor.Bytes).
func (m *Model) Bytes(slots, cells int) int64 {
	C, V := int64(m.width), int64(m.vocab)
	s, c := int64(slots), int64(cells)
	f32 := c*C + // encoder_outputs
		c + // attention
		s*V // log_probs
	if m.copy {
		f32 += c // copy_probs
	}
	for k := range m.shapes {
		f32 += 2 * int64(m.stateSize(k, slots)) // states, ping-pong
	}
	i64 := 5*s + // input_ids, source_lengths (decoder, encoder, gather scratch), identity parents
		c // source_ids
	return 4*f32 + 8*i64 + 8*2*s // and the 64-bit row ids with their scratch
}
