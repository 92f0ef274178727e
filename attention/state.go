package attention

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// InInputFeed names the input-feeding state (OpenNMT-py's and JoeyNMT's
// input_feeding): the previous step's attentional vector, [1, batch, H],
// zeros before the first step.
const InInputFeed = "input_feed"

// StateSpec is one recurrent state the decoder step carries. It is an
// input of decoder.onnx called Name, the output NextPrefix+Name of the
// same shape (its value after the step), and an output of encoder.onnx
// called Name (its value before the first step). Every state is
// [Rows, batch, Width]: the batch is always axis 1, so that the code that
// carries states (the decoding core, beam search's reordering, the
// batching scheduler, greedy.onnx and beam.onnx) copies, gathers and
// batches them without knowing what they mean.
type StateSpec struct {
	Name  string `json:"name"`
	Rows  int    `json:"rows"`
	Width int    `json:"width"`
}

// String is "name [rows, batch, width]".
func (s StateSpec) String() string { return fmt.Sprintf("%s [%d, batch, %d]", s.Name, s.Rows, s.Width) }

// NextPrefix names a state's decoder output after its input: hidden ->
// next_hidden.
const NextPrefix = "next_"

// States lists the decoder's recurrent states for the configuration, in
// the order of decoder.onnx's inputs: hidden [L, batch, H], cell (LSTM
// only), then what the architecture adds (input_feed [1, batch, H] with
// input feeding). attnx.json records them as "decoder_states".
func (c Config) States() []StateSpec {
	c = c.WithDefaults()
	out := []StateSpec{{Name: InHidden, Rows: c.Layers, Width: c.Hidden}}
	if c.Cell.HasCellState() {
		out = append(out, StateSpec{Name: InCell, Rows: c.Layers, Width: c.Hidden})
	}
	if c.InputFeed {
		out = append(out, StateSpec{Name: InInputFeed, Rows: 1, Width: c.Hidden})
	}
	return out
}

// CheckStates reports the first difference between recorded states (an
// attnx.json's "decoder_states") and those the configuration implies.
func (c Config) CheckStates(recorded []StateSpec) error {
	want := c.States()
	if len(recorded) != len(want) {
		return fmt.Errorf("decoder_states lists %d states, the configuration implies %d (%v)", len(recorded), len(want), want)
	}
	for i, s := range recorded {
		if s != want[i] {
			return fmt.Errorf("decoder_states[%d] is %v, the configuration implies %v", i, s, want[i])
		}
	}
	return nil
}

// decState is the decoder's recurrent state inside a graph: one value per
// StateSpec, in order.
type decState []*builder.Value

// rnn is the recurrent layers' part of the state: hidden, and cell for an
// LSTM.
func (st decState) rnn(c Cell) rnnState {
	r := rnnState{h: st[0]}
	if c.HasCellState() {
		r.c = st[1]
	}
	return r
}

// feed is the input-feeding state [1, batch, H], squeezed to [batch, H]
// by the caller; nil without input feeding.
func (st decState) feed(c Cell) *builder.Value {
	i := 1
	if c.HasCellState() {
		i = 2
	}
	if i < len(st) {
		return st[i]
	}
	return nil
}

// list is the state's values in StateSpec order: h, then c when there is
// one.
func (st rnnState) list() decState {
	if st.c != nil {
		return decState{st.h, st.c}
	}
	return decState{st.h}
}

// feedRNN runs the decoder RNN of one step of an input-feeding decoder
// (OpenNMT-py's and JoeyNMT's): the input ids' embeddings, followed by the
// previous attentional vector when the model feeds it, through the
// layers. It returns the next RNN state and its top layer's output.
func (s *modelGraph) feedRNN(in stepInputs) (rnnState, *builder.Value) {
	_, next, q := s.feedRNNInput(in)
	return next, q
}

// feedRNNInput is feedRNN, returning the RNN's input too.
func (s *modelGraph) feedRNNInput(in stepInputs) (x *builder.Value, next rnnState, q *builder.Value) {
	x = s.embed(in.ids)
	if s.cfg.InputFeed {
		x = ops.Concat(-1, x, ops.Squeeze(in.states.feed(s.cfg.Cell), s.c.ints(0)))
	}
	next = s.decoderRNN(x, in.states.rnn(s.cfg.Cell))
	return x, next, s.top(next.h)
}

// feedStates lists the next decoder state: the RNN's, then, when the model
// feeds it, the attentional vector att as input_feed [1, batch, H].
func (s *modelGraph) feedStates(next rnnState, att *builder.Value) decState {
	states := next.list()
	if s.cfg.InputFeed {
		states = append(states, ops.Unsqueeze(att, s.c.ints(0)))
	}
	return states
}
