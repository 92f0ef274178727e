package attention

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// toolkitArch is an architecture of a toolkit or another tutorial
// (ToolkitArchs, docs/toolkits.md). Its checkpoints name their keys in the
// toolkit's own way and do not say everything about the model (OpenNMT-py
// keeps the options in opt, JoeyNMT in config.yaml), so the toolkit's
// container reader gives the Config and FromToolkit checks the keys
// against it, instead of FromStateDict inferring the model from the
// article's key names.
type toolkitArch interface {
	Architecture
	// checkpointKeys describes the checkpoint of a model of cfg.
	checkpointKeys(cfg Config) toolkitKeys
}

// toolkitKeys is a toolkit checkpoint's layout for one configuration.
type toolkitKeys struct {
	// srcEmb and tgtEmb are the embedding tables' keys; equal when the
	// model shares one table (the chatbot tutorial).
	srcEmb, tgtEmb string
	// encRNN is the prefix of the encoder's nn.LSTM/nn.GRU
	// (prefix.weight_ih_l{k}, with _reverse for the backward direction).
	encRNN string
	// decRNN is the prefix of the decoder's recurrent layers: an
	// nn.LSTM/nn.GRU, or with decCells a stack of LSTMCell/GRUCell
	// (prefix.layers.{k}.weight_ih, OpenNMT-py's input-feed decoder).
	decRNN   string
	decCells bool
	// decIn is the decoder's first layer's input size, symbolic ("Et+H").
	decIn string
	// params are every other key as saved, symbolic (symbols H, E, Et, h,
	// C, Vt, hL); Optional ones are accepted and ignored.
	params []layout.Key
	// derive, when set, turns the saved params into the graph's (splitting
	// a Linear over a concatenation into its blocks, taking a tied
	// classifier's weight from saved, every tensor read, or changing one),
	// and graph lists those when they are not the saved non-optional
	// params.
	derive func(p, saved map[string]*builder.Tensor) error
	graph  []layout.Key
}

// graphKeys are the Params a Weights of the layout holds.
func (k toolkitKeys) graphKeys() []layout.Key {
	if k.graph != nil {
		return k.graph
	}
	var out []layout.Key
	for _, p := range k.params {
		if !p.Optional {
			out = append(out, p)
		}
	}
	return out
}

// paramKeys are the Params a Weights of architecture ar and cfg must
// hold.
func paramKeys(ar Architecture, cfg Config) []layout.Key {
	if tk, ok := ar.(toolkitArch); ok {
		return tk.checkpointKeys(cfg).graphKeys()
	}
	return ar.DecoderKeys()
}

// toolkitBase holds what every toolkit architecture answers alike: they
// are never detected from the article's key names, and their sizes come
// with the Config.
type toolkitBase struct{}

func (toolkitBase) Detect(map[string][]int64) bool { return false }

func (toolkitBase) sizes(map[string][]int64, *Config) error { return nil }

// rnnKeyNames lists the four keys of one recurrent layer: nn.LSTM's
// prefix.weight_ih_l{k}{suffix}, or a cell stack's
// prefix.layers.{k}.weight_ih.
func rnnKeyNames(prefix string, k int, suffix string, cells bool) [4]string {
	var out [4]string
	for i, p := range []string{"weight_ih", "weight_hh", "bias_ih", "bias_hh"} {
		if cells {
			out[i] = fmt.Sprintf("%s.layers.%d.%s", prefix, k, p)
		} else {
			out[i] = fmt.Sprintf("%s.%s_l%d%s", prefix, p, k, suffix)
		}
	}
	return out
}

// toolkitSpecs lists every key of a checkpoint of cfg with its shape.
func toolkitSpecs(tk toolkitArch, cfg Config) (toolkitKeys, []KeySpec, error) {
	cfg = cfg.WithDefaults()
	keys, all := toolkitLayout(tk, cfg)
	specs, err := resolve(all, cfg)
	return keys, specs, err
}

// toolkitLayout lists every key of a checkpoint of cfg with its symbolic
// shape.
func toolkitLayout(tk toolkitArch, cfg Config) (toolkitKeys, []layout.Key) {
	keys := tk.checkpointKeys(cfg)
	var all []layout.Key
	all = append(all, key(keys.srcEmb, "source embedding", "Vs", "E"))
	if keys.tgtEmb != keys.srcEmb {
		all = append(all, key(keys.tgtEmb, "target embedding", "Vt", "Et"))
	}
	g := strconv.Itoa(cfg.Cell.gates())
	rnn := func(prefix string, k int, suffix string, cells bool, in, h string) {
		names := rnnKeyNames(prefix, k, suffix, cells)
		all = append(all,
			key(names[0], "", g+h, in), key(names[1], "", g+h, h),
			key(names[2], "", g+h), key(names[3], "", g+h))
	}
	sh := cfg.encoderStack()
	for k := 0; k < sh.n; k++ {
		in := "E"
		if k > 0 {
			in = strconv.Itoa(sh.dirs) + "h"
		}
		rnn(keys.encRNN, k, "", false, in, "h")
		if sh.dirs == 2 {
			rnn(keys.encRNN, k, "_reverse", false, in, "h")
		}
	}
	for k := 0; k < cfg.Layers; k++ {
		in := keys.decIn
		if k > 0 {
			in = "H"
		}
		rnn(keys.decRNN, k, "", keys.decCells, in, "H")
	}
	return keys, append(all, keys.params...)
}

// IsToolkitLayout reports whether a layout of Layouts is a toolkit's.
func IsToolkitLayout(name string) bool { return strings.HasPrefix(name, string(Bentrevett)+"/") }

// toolkitLayouts are the key families Diagnose compares a checkpoint with
// besides the article's, for the toolkit models that come as plain
// state_dicts, whose attribute names their users change:
// bentrevett's tutorial 3/4, under each era's names (2018: v [H] and out;
// 2019: v [H] and fc_out; 2020: v.weight; 2023: attn_fc, v_fc).
func toolkitLayouts() []layout.Layout {
	_, keys := toolkitLayout(bentrevett{}, Config{Arch: Bentrevett, Cell: GRU, Layers: 1, Bidirectional: true})
	var out []layout.Layout
	for _, era := range []string{"2020", "2023", "2018", "2019"} {
		var ks []layout.Key
		for _, k := range keys {
			switch era {
			case "2023":
				for from, to := range bentrevettEras[0].rename {
					if k.Name == to {
						k.Name = from
					}
				}
			case "2018", "2019":
				if k.Name == "decoder.attention.v.weight" {
					k.Name, k.Shape = "decoder.attention.v", []string{"H"}
				}
				if era == "2018" {
					for from, to := range bentrevettEras[1].rename {
						if k.Name == to {
							k.Name = from
						}
					}
				}
			}
			ks = append(ks, k)
		}
		out = append(out, layout.Layout{Name: string(Bentrevett) + "/" + era + "-names", Keys: ks})
	}
	return out
}

// FromToolkit checks the tensors of a toolkit checkpoint against the model
// cfg describes (its container reader read cfg from the toolkit's options)
// and converts them: every key present with its shape, none unexpected,
// the recurrent weights repacked into ONNX's layout (both directions of a
// bidirectional layer in one), the rest shared. Errors name the key and
// the shape expected; keys that do not fit give a *KeysError.
func FromToolkit(cfg Config, tensors map[string]*builder.Tensor, opt Options) (*Weights, []string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	ar, _ := Lookup(cfg.Arch)
	tk, ok := ar.(toolkitArch)
	if !ok {
		return nil, nil, fmt.Errorf("%s is not a toolkit architecture (want one of %s)", cfg.Arch, archList(ToolkitArchs))
	}
	if opt.Arch != "" && opt.Arch != cfg.Arch {
		return nil, nil, fmt.Errorf("--arch %s disagrees with the checkpoint: it holds a %s model", opt.Arch, cfg.Arch)
	}
	keys, specs, err := toolkitSpecs(tk, cfg)
	if err != nil {
		return nil, nil, err
	}
	vals, notes, err := readKeys(tensors, specs, cfg, opt, cfg.Arch.Toolkit(), func(what string) string { return what })
	if err != nil {
		return nil, nil, err
	}

	w := &Weights{Config: cfg, SrcEmbedding: vals[keys.srcEmb], TgtEmbedding: vals[keys.tgtEmb], Params: map[string]*builder.Tensor{}}
	layer := func(prefix string, k int, suffix string, cells bool, hidden int) (RNNLayer, error) {
		n := rnnKeyNames(prefix, k, suffix, cells)
		l, err := ConvertRNNLayer(cfg.Cell, hidden, vals[n[0]], vals[n[1]], vals[n[2]], vals[n[3]])
		if err != nil {
			return l, fmt.Errorf("%s layer %d%s: %w", prefix, k, suffix, err)
		}
		return l, nil
	}
	sh := cfg.encoderStack()
	for k := 0; k < sh.n; k++ {
		l, err := layer(keys.encRNN, k, "", false, sh.hidden)
		if err != nil {
			return nil, nil, err
		}
		if sh.dirs == 2 {
			r, err := layer(keys.encRNN, k, "_reverse", false, sh.hidden)
			if err != nil {
				return nil, nil, err
			}
			l = joinDirections(l, r)
		}
		w.Encoder = append(w.Encoder, l)
	}
	for k := 0; k < cfg.Layers; k++ {
		l, err := layer(keys.decRNN, k, "", keys.decCells, cfg.Hidden)
		if err != nil {
			return nil, nil, err
		}
		w.Decoder = append(w.Decoder, l)
	}
	for _, p := range keys.params {
		if !p.Optional {
			w.Params[p.Name] = vals[p.Name]
		}
	}
	if keys.derive != nil {
		if err := keys.derive(w.Params, vals); err != nil {
			return nil, nil, err
		}
	}
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	return w, notes, nil
}

// matrix returns the shape of the 2-D key k; what names the checkpoint in
// errors.
func matrix(shapes map[string][]int64, k, what string) ([]int64, error) {
	d, ok := shapes[k]
	if !ok {
		return nil, keysError("%s is missing key %s", what, k)
	}
	if len(d) != 2 {
		return nil, fmt.Errorf("checkpoint key %s: shape %v, expected 2 dimensions", k, d)
	}
	return d, nil
}

// checkGates checks that encoder.rnn.weight_hh_l0 (shape hh) has the gate
// rows of the cell the toolkit's option (named option) says.
func checkGates(hh []int64, cell Cell, option string) error {
	if hh[0] != int64(cell.gates())*hh[1] {
		return fmt.Errorf("checkpoint key encoder.rnn.weight_hh_l0: shape %v, but %s %s has %d gate blocks", hh, option, strings.ToUpper(string(cell)), cell.gates())
	}
	return nil
}

// matrices returns the shapes of the 2-D keys, in order (see matrix).
func matrices(shapes map[string][]int64, what string, keys ...string) ([][]int64, error) {
	out := make([][]int64, len(keys))
	for i, k := range keys {
		d, err := matrix(shapes, k, what)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// countLayers counts the consecutive keys pattern (with %d the layer)
// present from layer 0.
func countLayers(shapes map[string][]int64, pattern string) int {
	n := 0
	for n < 64 {
		if _, ok := shapes[fmt.Sprintf(pattern, n)]; !ok {
			break
		}
		n++
	}
	return n
}

// joinDirections is a bidirectional layer's ONNX weights from its two
// directions' ([1, ...] each): [2, ...], forward first.
func joinDirections(f, r RNNLayer) RNNLayer {
	cat := func(a, b *builder.Tensor) *builder.Tensor {
		dims := slices.Clone(a.Dims)
		dims[0] = 2
		return &builder.Tensor{DType: builder.Float, Dims: dims, Raw: append(slices.Clip(slices.Clone(a.Raw)), b.Raw...)}
	}
	return RNNLayer{W: cat(f.W, r.W), R: cat(f.R, r.R), B: cat(f.B, r.B)}
}

// splitColumns splits the Linear weight [out, a+b] called key into its
// column blocks [out, a] and [out, b], stored under the keys left and
// right (with ".weight" appended), for a Linear applied to a
// concatenation whose two parts change at different rates (one per
// sentence, one per step).
func splitColumns(p map[string]*builder.Tensor, key string, a int, left, right string) error {
	t := p[key]
	if t == nil || len(t.Dims) != 2 || t.Dims[1] <= int64(a) {
		return fmt.Errorf("parameter %s: cannot split its columns at %d", key, a)
	}
	v, err := t.Float32s()
	if err != nil {
		return fmt.Errorf("parameter %s: %w", key, err)
	}
	out, in := int(t.Dims[0]), int(t.Dims[1])
	l, r := make([]float32, 0, out*a), make([]float32, 0, out*(in-a))
	for i := range out {
		l = append(l, v[i*in:i*in+a]...)
		r = append(r, v[i*in+a:(i+1)*in]...)
	}
	p[left+".weight"] = builder.FloatTensor([]int64{int64(out), int64(a)}, l)
	p[right+".weight"] = builder.FloatTensor([]int64{int64(out), int64(in - a)}, r)
	return nil
}

// Graph pieces the toolkit architectures share.

// zeroState is a state of zeros [rows, batch, width], batch taken from
// enc [batch, src_len, C].
func (s *modelGraph) zeroState(enc *builder.Value, rows, width int) *builder.Value {
	b := ops.Shape(enc, ops.ShapeOpts{End: ops.Int(1)})
	shape := ops.Concat(0, s.c.ints(int64(rows)), b, s.c.ints(int64(width)))
	return ops.Expand(s.c.scalarFloat(0), shape)
}

// directionsPerLayer turns a bidirectional final state [2L, batch, h]
// (PyTorch's order) into [L, batch, 2h]: each layer's forward and
// backward states side by side (OpenNMT-py's decoder init_state).
func (s *modelGraph) directionsPerLayer(st *builder.Value, layers, h int) *builder.Value {
	x := ops.Reshape(st, s.c.ints(int64(layers), 2, -1, int64(h)), ops.ReshapeOpts{}) // [L, 2, batch, h]
	x = ops.Transpose(x, []int64{0, 2, 1, 3})                                         // [L, batch, 2, h]
	return ops.Reshape(x, s.c.ints(0, 0, int64(2*h)), ops.ReshapeOpts{})
}

// topDirections is the top layer's forward and backward final states side
// by side, [batch, 2h], from a bidirectional final state [2L, batch, h].
func (s *modelGraph) topDirections(st *builder.Value, layers, h int) *builder.Value {
	top := ops.Slice(st, s.c.ints(int64(2*layers-2)), s.c.ints(int64(2*layers)), s.c.ints(0), nil) // [2, batch, h]
	x := ops.Transpose(top, []int64{1, 0, 2})                                                      // [batch, 2, h]
	return ops.Reshape(x, s.c.ints(0, int64(2*h)), ops.ReshapeOpts{})
}

// repeatRows repeats x [batch, n] as a state [rows, batch, n].
func (s *modelGraph) repeatRows(x *builder.Value, rows int) *builder.Value {
	x = ops.Unsqueeze(x, s.c.ints(0))
	if rows == 1 {
		return x
	}
	return ops.Concat(0, slices.Repeat([]*builder.Value{x}, rows)...)
}

// logits is the Linear called prefix on features, with its bias when bias
// is set, and log_softmax of it: log_probs [batch, Vt].
func (s *modelGraph) logProbs(prefix string, features *builder.Value, bias bool) *builder.Value {
	if bias {
		return s.classify(prefix, features)
	}
	if s.reduced() {
		return ops.LogSoftmax(s.qlinear(features, prefix, false, formsFor(s.opt.Weights).classifier), -1)
	}
	return ops.LogSoftmax(s.linear(features, prefix, false), -1)
}

// classifierLinear is the Linear called prefix (with its bias) as a
// classifier: at reduced precision it takes the classifier's form.
func (s *modelGraph) classifierLinear(prefix string, x *builder.Value) *builder.Value {
	if s.reduced() {
		return s.qlinear(x, prefix, true, formsFor(s.opt.Weights).classifier)
	}
	return s.linear(x, prefix, true)
}

// dotScore is enc_s . q for every position: [batch, src_len], from keys
// [batch, src_len, n] and q [batch, n].
func (s *modelGraph) dotScore(keys, q *builder.Value) *builder.Value {
	last := s.c.ints(-1)
	return ops.Squeeze(ops.MatMul(keys, ops.Unsqueeze(q, last)), last)
}

// additiveScore is tanh(keys_s + qp) . v for every position, v the [1, n]
// weight called vKey: [batch, src_len].
func (s *modelGraph) additiveScore(keys, qp *builder.Value, vKey string) *builder.Value {
	u := ops.Tanh(ops.Add(keys, ops.Unsqueeze(qp, s.c.ints(1))))
	return ops.MatMul(u, s.param(vKey, vector))
}
