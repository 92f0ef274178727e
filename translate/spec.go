package translate

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/onnxrun"
)

// ioSpec is what attnx.json implies about one graph input or output.
type ioSpec struct {
	name  string
	dtype onnxrun.DType
	// dims holds the fixed sizes, -1 for dynamic ones; labels names each
	// fixed one after its attnx.json field.
	dims   []int64
	labels []string
	// optional inputs and outputs may be absent: the LSTM cell state,
	// which GRU models do not have (decode.NewModel checks the pairs).
	optional bool
}

// graphSpec is the interface one model file must have.
type graphSpec struct {
	role             string
	inputs, outputs  []ioSpec
	allowExtraOutput bool
}

// stateSpecs are the recurrent states attnx.json implies, named with
// prefix ("" or attention.NextPrefix).
func (t *Translator) stateSpecs(prefix string) []ioSpec {
	var out []ioSpec
	for _, st := range t.info.Config.States() {
		// Every state is [rows, batch, H]: L rows for the recurrent ones,
		// one for input_feed.
		rows := "num_layers"
		if st.Name == attention.InInputFeed {
			rows = "one row"
		}
		out = append(out, ioSpec{name: prefix + st.Name, dtype: onnxrun.Float32, dims: []int64{int64(st.Rows), -1, int64(st.Width)},
			labels: []string{rows, "", "hidden_size"}})
	}
	return out
}

// encoderOutputs is encoder_outputs' spec: [batch, src_len, C].
func (t *Translator) encoderOutputs() ioSpec {
	C := int64(t.info.Config.EncoderWidth())
	label := "hidden_size"
	if t.info.Config.Bidirectional {
		label = "encoder output size (encoder_hidden_size times the directions the model concatenates)"
	}
	return ioSpec{name: attention.OutEncoder, dtype: onnxrun.Float32, dims: []int64{-1, -1, C}, labels: []string{"", "", label}}
}

func (t *Translator) encoderSpec() graphSpec {
	return graphSpec{role: "encoder",
		inputs: []ioSpec{
			{name: attention.InSourceIDs, dtype: onnxrun.Int64, dims: []int64{-1, -1}},
			{name: attention.InSourceLengths, dtype: onnxrun.Int64, dims: []int64{-1}},
		},
		outputs: append([]ioSpec{t.encoderOutputs()}, t.stateSpecs("")...)}
}

func (t *Translator) decoderSpec() graphSpec {
	Vt := int64(t.info.TgtVocab)
	ins := append([]ioSpec{{name: attention.InInputIDs, dtype: onnxrun.Int64, dims: []int64{-1}}}, t.stateSpecs("")...)
	ins = append(ins, t.encoderOutputs(), ioSpec{name: attention.InSourceLengths, dtype: onnxrun.Int64, dims: []int64{-1}})
	outs := []ioSpec{{name: attention.OutLogProbs, dtype: onnxrun.Float32, dims: []int64{-1, Vt}, labels: []string{"", "tgt_vocab_size"}}}
	outs = append(outs, t.stateSpecs(attention.NextPrefix)...)
	outs = append(outs, ioSpec{name: attention.OutAttention, dtype: onnxrun.Float32, dims: []int64{-1, -1}})
	if t.info.Config.HasCopy() {
		outs = append(outs, ioSpec{name: attention.OutCopyProbs, dtype: onnxrun.Float32, dims: []int64{-1, -1}})
	}
	return graphSpec{role: "decoder", inputs: ins, outputs: outs}
}

func (t *Translator) greedySpec() graphSpec {
	return graphSpec{role: "greedy",
		inputs: []ioSpec{
			{name: attention.InSourceIDs, dtype: onnxrun.Int64, dims: []int64{-1, -1}},
			{name: attention.InSourceLengths, dtype: onnxrun.Int64, dims: []int64{-1}},
			{name: inMaxLen, dtype: onnxrun.Int64, dims: []int64{}},
		},
		outputs: []ioSpec{
			{name: outOutputIDs, dtype: onnxrun.Int64, dims: []int64{-1, -1}},
			{name: outGreedyAtt, dtype: onnxrun.Float32, dims: []int64{-1, -1, -1}},
			// Absent from the greedy.onnx of attnx before it recorded
			// greedy scores: Open decides what to do without it.
			{name: attention.OutTokenLogProbs, dtype: onnxrun.Float32, dims: []int64{-1, -1}, optional: true},
		},
		allowExtraOutput: true}
}

// hasOutput reports whether s has an output named name.
func hasOutput(s *onnxrun.Session, name string) bool {
	for _, io := range s.Outputs() {
		if io.Name == name {
			return true
		}
	}
	return false
}

// check compares the session's declared inputs and outputs with the spec.
// Dimensions the model leaves symbolic are accepted for fixed ones.
func (g graphSpec) check(path string, s *onnxrun.Session) error {
	if err := checkIOs(path, "input", s.Inputs(), g.inputs, false); err != nil {
		return err
	}
	return checkIOs(path, "output", s.Outputs(), g.outputs, g.allowExtraOutput)
}

func checkIOs(path, what string, have []onnxrun.IOInfo, want []ioSpec, allowExtra bool) error {
	byName := map[string]onnxrun.IOInfo{}
	var names []string
	for _, io := range have {
		byName[io.Name] = io
		names = append(names, fmt.Sprintf("%q %s", io.Name, io))
	}
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	expected := map[string]bool{}
	for _, w := range want {
		expected[w.name] = true
		io, ok := byName[w.name]
		if !ok && w.optional {
			continue
		}
		if !ok {
			return fmt.Errorf("translate: %s disagrees with attnx.json: it has no %s %q (its %ss: %s)", path, what, w.name, what, list)
		}
		if io.Kind != "tensor" || io.Type != w.dtype {
			return fmt.Errorf("translate: %s disagrees with attnx.json: %s %q is %s, want element type %s", path, what, w.name, io, w.dtype)
		}
		if !io.RankKnown {
			continue
		}
		if len(io.Shape) != len(w.dims) {
			return fmt.Errorf("translate: %s disagrees with attnx.json: %s %q is %s, want rank %d", path, what, w.name, io, len(w.dims))
		}
		for j, d := range w.dims {
			if d >= 0 && io.Shape[j] >= 0 && io.Shape[j] != d {
				label := ""
				if j < len(w.labels) && w.labels[j] != "" {
					label = fmt.Sprintf(" (attnx.json %s = %d)", w.labels[j], d)
				}
				return fmt.Errorf("translate: %s disagrees with attnx.json: %s %q is %s: dimension %d is %d, want %d%s",
					path, what, w.name, io, j, io.Shape[j], d, label)
			}
		}
	}
	if allowExtra && what == "output" {
		return nil
	}
	for _, io := range have {
		if !expected[io.Name] {
			return fmt.Errorf("translate: %s has an unexpected %s %q %s: not part of the attnx interface (its %ss: %s)", path, what, io.Name, io, what, list)
		}
	}
	return nil
}
