package attention

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
)

// Weights is a checked checkpoint, ready to build graphs from.
type Weights struct {
	// Config is inferred from the keys and shapes.
	Config Config
	// SrcEmbedding is [Vs, E]; TgtEmbedding is [Vt, E].
	SrcEmbedding, TgtEmbedding *builder.Tensor
	// Encoder and Decoder hold one entry per recurrent layer, in ONNX's
	// layout.
	Encoder, Decoder []RNNLayer
	// Params holds the decoder's own parameters (attention, classifier:
	// the keys Architecture.DecoderKeys lists), by checkpoint key, float32
	// in PyTorch's layout.
	Params map[string]*builder.Tensor
}

// Validate checks that the weights are complete and agree with Config:
// every tensor present, float32, of the shape the configuration implies.
// Encoder, Decoder and Greedy call it first, so that hand-made or
// half-filled Weights give an error instead of a panic.
func (w *Weights) Validate() error {
	if w == nil {
		return fmt.Errorf("invalid weights: nil")
	}
	cfg := w.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid weights: config: %w", err)
	}
	ar, err := Lookup(cfg.Arch)
	if err != nil {
		return fmt.Errorf("invalid weights: %w", err)
	}
	E, H := int64(cfg.Embedding), int64(cfg.Hidden)
	if err := checkFloat("encoder.embedding.weight", w.SrcEmbedding, []int64{int64(cfg.SrcVocab), E}); err != nil {
		return fmt.Errorf("invalid weights: %w", err)
	}
	if err := checkFloat("decoder.embedding.weight", w.TgtEmbedding, []int64{int64(cfg.TgtVocab), int64(cfg.TgtEmbeddingSize())}); err != nil {
		return fmt.Errorf("invalid weights: %w", err)
	}
	if err := checkLayers("encoder", w.Encoder, cfg, cfg.encoderStack()); err != nil {
		return fmt.Errorf("invalid weights: %w", err)
	}
	if err := checkLayers("decoder", w.Decoder, cfg, stackShape{cfg.Layers, 1, cfg.Hidden, decoderInput(ar, cfg), "num_layers"}); err != nil {
		return fmt.Errorf("invalid weights: %w", err)
	}
	keys, err := resolve(paramKeys(ar, cfg), cfg)
	if err != nil {
		return fmt.Errorf("invalid weights: %w", err)
	}
	for _, k := range keys {
		if !k.Optional {
			if err := checkFloat(k.Key, w.Params[k.Key], k.Dims); err != nil {
				return fmt.Errorf("invalid weights: %w (%s, %s model with H=%d)", err, k.What, cfg.Arch, H)
			}
		}
	}
	return nil
}

// KeysError is FromStateDict's error for a checkpoint whose keys do not
// fit the layout of any architecture: a key missing or unexpected, several
// recurrent modules, no architecture or several detected. Callers can then
// compare the keys with Layouts (checkpoint.Diagnose) to say what would fit.
// Errors about keys that fit a layout (a wrong shape, dtype or non-finite
// values) are not KeysErrors.
type KeysError struct{ Msg string }

// Error returns the message: what the keys lack or hold twice.
func (e *KeysError) Error() string { return e.Msg }

func keysError(format string, args ...any) error {
	return &KeysError{Msg: fmt.Sprintf(format, args...)}
}

// Options controls FromStateDict.
type Options struct {
	// Arch, when set, must agree with the architecture the keys imply.
	Arch Arch
	// AllowNonFinite accepts weights that hold NaN or Inf.
	AllowNonFinite bool
}

// rnnKey matches a recurrent layer's parameter: part, module attribute,
// parameter, layer.
var rnnKey = regexp.MustCompile(`^(encoder|decoder)\.([A-Za-z_][A-Za-z0-9_]*)\.(weight_ih|weight_hh|bias_ih|bias_hh)_l(\d+)$`)

// FromStateDict checks a state_dict against the spec's checkpoint layouts
// and converts it: it detects the architecture, the cell (from the
// recurrent modules' names, "lstm" or "gru", or from their gate rows for a
// module called "rnn": 4H LSTM, 3H GRU) and the sizes, checks every key's
// shape, and repacks the recurrent weights into ONNX's layout. float32
// tensors' data is shared with the returned Weights, not copied: do not
// modify either while the other is in use. It returns notes for the user
// (ignored keys, converted dtypes) beside the weights. Errors name the key
// at fault, its shape and the expected shape; a checkpoint whose keys fit
// no architecture's layout gives a *KeysError.
func FromStateDict(tensors map[string]*builder.Tensor, opt Options) (*Weights, []string, error) {
	var notes []string
	keys := make([]string, 0, len(tensors))
	shapes := make(map[string][]int64, len(tensors))
	for k, t := range tensors {
		keys = append(keys, k)
		shapes[k] = t.Dims
	}
	sort.Strings(keys)

	cfg, ar, attrs, err := inferConfig(shapes)
	if err != nil {
		return nil, nil, err
	}
	if opt.Arch != "" && opt.Arch != cfg.Arch {
		return nil, nil, fmt.Errorf("--arch %s disagrees with the checkpoint: its keys (%s) are those of a %s model", opt.Arch, ar.Evidence(), cfg.Arch)
	}

	specs, err := expectedKeys(ar, cfg, attrs[0], attrs[1])
	if err != nil {
		return nil, nil, err
	}
	vals, notes, err := readKeys(tensors, specs, cfg, opt, "", func(string) string { return "the article defines it but never uses it" })
	if err != nil {
		return nil, nil, err
	}
	w, err := assemble(ar, cfg, attrs, vals)
	if err != nil {
		return nil, nil, err
	}
	return w, notes, nil
}

// readKeys checks a checkpoint's tensors against the keys a model of cfg
// has (specs) and returns the non-optional ones as float32, with notes:
// an unexpected or missing key is a *KeysError (whose message ends with
// who, when given), an optional key present is ignored with a note saying
// why (ignored gives the reason). float32 tensors are used as they are:
// their Raw bytes are shared, not decoded and re-encoded, so that
// converting a checkpoint of N bytes costs N more bytes only for the
// recurrent weights (reordered) and the small matrices some graphs
// transpose.
func readKeys(tensors map[string]*builder.Tensor, specs []KeySpec, cfg Config, opt Options, who string, ignored func(what string) string) (map[string]*builder.Tensor, []string, error) {
	expected := map[string]KeySpec{}
	for _, k := range specs {
		expected[k.Key] = k
	}
	if who != "" {
		who = " (" + who + ")"
	}
	keys := make([]string, 0, len(tensors))
	for k := range tensors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var notes, names []string
	for _, k := range keys {
		spec, ok := expected[k]
		if !ok {
			return nil, nil, keysError("checkpoint has an unexpected key %s %v: not part of a %s model%s", k, tensors[k].Dims, cfg, who)
		}
		if spec.Optional {
			notes = append(notes, fmt.Sprintf("ignoring %s: %s", k, ignored(spec.What)))
		}
	}
	for k, spec := range expected {
		if !spec.Optional {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	vals := make(map[string]*builder.Tensor, len(names))
	converted := map[builder.DataType][]string{}
	for _, k := range names {
		want := expected[k]
		t, ok := tensors[k]
		if !ok {
			return nil, nil, keysError("checkpoint is missing key %s (expected shape %v, %s) for a %s model", k, want.Dims, want.What, cfg)
		}
		ft, err := floatParam(k, t, want, opt, converted)
		if err != nil {
			return nil, nil, err
		}
		vals[k] = ft
	}
	return vals, append(notes, conversionNotes(converted)...), nil
}

// floatParam checks the tensor t of checkpoint key k against want and
// returns it as float32, sharing float32 data; converted records the keys
// converted from other dtypes.
func floatParam(k string, t *builder.Tensor, want KeySpec, opt Options, converted map[builder.DataType][]string) (*builder.Tensor, error) {
	if !slices.Equal(t.Dims, want.Dims) {
		return nil, fmt.Errorf("checkpoint key %s: shape %v, expected %v (%s)", k, t.Dims, want.Dims, want.What)
	}
	var ft *builder.Tensor
	if t.DType == builder.Float {
		if n := builder.NumElements(t.Dims); int64(len(t.Raw)) != 4*n {
			return nil, fmt.Errorf("checkpoint key %s: %d bytes of float32 data for shape %v, expected %d", k, len(t.Raw), t.Dims, 4*n)
		}
		ft = &builder.Tensor{DType: builder.Float, Dims: append([]int64{}, t.Dims...), Raw: t.Raw}
	} else {
		v, err := t.ToFloat32()
		if err != nil {
			return nil, fmt.Errorf("checkpoint key %s: dtype %v, expected float32", k, t.DType)
		}
		converted[t.DType] = append(converted[t.DType], k)
		ft = builder.FloatTensor(t.Dims, v)
	}
	if !opt.AllowNonFinite {
		if n, first, v := countNonFiniteRaw(ft.Raw); n > 0 {
			return nil, fmt.Errorf("checkpoint key %s: %d non-finite values (first at flat index %d: %v); pass --allow-nonfinite to export anyway", k, n, first, v)
		}
	}
	return ft, nil
}

// conversionNotes says, per dtype, which tensors were converted.
func conversionNotes(converted map[builder.DataType][]string) []string {
	var notes []string
	for _, dt := range []builder.DataType{builder.Float16, builder.BFloat16, builder.Double} {
		if keys := converted[dt]; len(keys) > 0 {
			notes = append(notes, conversionNote(dt, keys))
		}
	}
	return notes
}

// conversionNote says which tensors were converted to float32, naming at
// most three of them.
func conversionNote(from builder.DataType, keys []string) string {
	if len(keys) == 1 {
		return fmt.Sprintf("converted %s from %v to float32", keys[0], from)
	}
	list := strings.Join(keys[:min(3, len(keys))], ", ")
	if len(keys) > 3 {
		list += fmt.Sprintf(" and %d more", len(keys)-3)
	}
	return fmt.Sprintf("converted %d tensors from %v to float32 (%s)", len(keys), from, list)
}

// inferConfig reads the architecture, cell and sizes from the keys'
// shapes; attrs are the encoder's and the decoder's recurrent module names.
func inferConfig(shapes map[string][]int64) (cfg Config, ar Architecture, attrs [2]string, err error) {
	dims2 := func(k string) ([]int64, error) {
		d, ok := shapes[k]
		if !ok {
			return nil, keysError("checkpoint is missing key %s: not an attention seq2seq state_dict (expected encoder.* and decoder.* keys as in the spec)", k)
		}
		if len(d) != 2 || d[0] < 1 || d[1] < 1 {
			return nil, fmt.Errorf("checkpoint key %s: shape %v, expected 2 dimensions of at least 1", k, d)
		}
		return d, nil
	}
	src, err := dims2("encoder.embedding.weight")
	if err != nil {
		return cfg, nil, attrs, err
	}
	tgt, err := dims2("decoder.embedding.weight")
	if err != nil {
		return cfg, nil, attrs, err
	}
	cfg.SrcVocab, cfg.Embedding, cfg.TgtVocab = int(src[0]), int(src[1]), int(tgt[0])
	if tgt[1] != src[1] {
		return cfg, nil, attrs, fmt.Errorf("checkpoint key decoder.embedding.weight: shape %v, expected [%d %d] (Vt x E, with the embedding size E=%d of encoder.embedding.weight: attnx needs one embedding size)", tgt, tgt[0], src[1], src[1])
	}

	var cells [2]Cell
	layers := [2]int{}
	for i, part := range []string{"encoder", "decoder"} {
		attr, n, err := findRNN(shapes, part)
		if err != nil {
			return cfg, nil, attrs, err
		}
		attrs[i], layers[i] = attr, n
		hh := fmt.Sprintf("%s.%s.weight_hh_l0", part, attr)
		d, err := dims2(hh)
		if err != nil {
			return cfg, nil, attrs, err
		}
		if i == 0 {
			cfg.Hidden = int(d[1])
		}
		H := int64(cfg.Hidden)
		if d[1] != H || (d[0] != 3*H && d[0] != 4*H) {
			return cfg, nil, attrs, fmt.Errorf("checkpoint key %s: shape %v, expected [4H H] (LSTM) or [3H H] (GRU) with H=%d", hh, d, H)
		}
		rowCell := LSTM
		if d[0] == 3*H {
			rowCell = GRU
		}
		if attr != "rnn" && Cell(attr) != rowCell {
			return cfg, nil, attrs, fmt.Errorf("checkpoint key %s: shape %v has the %dH gate rows of a %s, but the module is called %s (expected [%dH H])",
				hh, d, rowCell.gates(), strings.ToUpper(string(rowCell)), attr, Cell(attr).gates())
		}
		cells[i] = rowCell
	}
	if cells[0] != cells[1] {
		return cfg, nil, attrs, fmt.Errorf("checkpoint has encoder cell %s, decoder cell %s: they must use the same cell (the decoder starts from the encoder's final state)",
			strings.ToUpper(string(cells[0])), strings.ToUpper(string(cells[1])))
	}
	cfg.Cell = cells[0]
	if layers[0] != layers[1] {
		return cfg, nil, attrs, fmt.Errorf("checkpoint has %d encoder %s layers but %d decoder layers: they must be equal (the decoder starts from the encoder's final state)",
			layers[0], strings.ToUpper(string(cfg.Cell)), layers[1])
	}
	cfg.Layers = layers[0]
	if ar, err = detect(shapes); err != nil {
		return cfg, nil, attrs, err
	}
	cfg.Arch = ar.Name()
	if err := ar.sizes(shapes, &cfg); err != nil {
		return cfg, nil, attrs, err
	}
	return cfg, ar, attrs, cfg.Validate()
}

// findRNN finds part's recurrent module among rnnAttrs and its number of
// layers (the highest l{k} plus one).
func findRNN(shapes map[string][]int64, part string) (attr string, layers int, err error) {
	found := map[string]int{}
	for k := range shapes {
		m := rnnKey.FindStringSubmatch(k)
		if m == nil || m[1] != part || !slices.Contains(rnnAttrs, m[2]) {
			continue
		}
		n, err := strconv.Atoi(m[4])
		if err != nil || n > 1<<20 {
			return "", 0, fmt.Errorf("checkpoint key %s: layer index %s out of range", k, m[4])
		}
		found[m[2]] = max(found[m[2]], n+1)
	}
	switch len(found) {
	case 0:
		return "", 0, keysError("checkpoint has no %s.lstm.weight_ih_l0 or %s.gru.weight_ih_l0: not an attention seq2seq state_dict (the %s needs an LSTM or GRU module called lstm, gru or rnn)", part, part, part)
	case 1:
		for a, n := range found {
			return a, n, nil
		}
	}
	var mods []string
	for a := range found {
		mods = append(mods, part+"."+a+".*")
	}
	sort.Strings(mods)
	return "", 0, keysError("checkpoint has several recurrent modules in the %s (%s): expected one", part, strings.Join(mods, ", "))
}

// countNonFiniteRaw counts the non-finite values among little-endian
// float32 bytes; it also returns the first one and its index.
func countNonFiniteRaw(raw []byte) (n, first int, firstVal float32) {
	first = -1
	for i := 0; i+4 <= len(raw); i += 4 {
		// An exponent of all ones is Inf or NaN.
		if bits := binary.LittleEndian.Uint32(raw[i:]); bits&0x7f800000 == 0x7f800000 {
			if n == 0 {
				first, firstVal = i/4, math.Float32frombits(bits)
			}
			n++
		}
	}
	return n, first, firstVal
}

// assemble builds Weights from checked float32 tensors, sharing their data
// but for the recurrent weights, which it repacks.
func assemble(ar Architecture, cfg Config, attrs [2]string, v map[string]*builder.Tensor) (*Weights, error) {
	w := &Weights{
		Config:       cfg,
		SrcEmbedding: v["encoder.embedding.weight"],
		TgtEmbedding: v["decoder.embedding.weight"],
		Params:       map[string]*builder.Tensor{},
	}
	for i, part := range []string{"encoder", "decoder"} {
		layers := make([]RNNLayer, cfg.Layers)
		for k := range layers {
			p := func(name string) *builder.Tensor { return v[fmt.Sprintf("%s.%s.%s_l%d", part, attrs[i], name, k)] }
			l, err := ConvertRNNLayer(cfg.Cell, cfg.Hidden, p("weight_ih"), p("weight_hh"), p("bias_ih"), p("bias_hh"))
			if err != nil {
				return nil, fmt.Errorf("%s.%s layer %d: %w", part, attrs[i], k, err)
			}
			layers[k] = l
		}
		if i == 0 {
			w.Encoder = layers
		} else {
			w.Decoder = layers
		}
	}
	for _, k := range ar.DecoderKeys() {
		if !k.Optional {
			w.Params[k.Name] = v[k.Name]
		}
	}
	return w, nil
}
