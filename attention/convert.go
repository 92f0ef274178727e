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

// LSTMLayer holds one LSTM layer's weights in ONNX's layout: W is
// [1, 4H, input], R is [1, 4H, H] and B is [1, 8H], gates ordered i, o, f, c.
type LSTMLayer struct {
	W, R, B *builder.Tensor
}

// Weights is a checked checkpoint, ready to build graphs from.
type Weights struct {
	// Config is inferred from the keys and shapes.
	Config Config
	// SrcEmbedding is [Vs, H]; TgtEmbedding is [Vt, H].
	SrcEmbedding, TgtEmbedding *builder.Tensor
	// Encoder and Decoder hold one entry per LSTM layer.
	Encoder, Decoder []LSTMLayer
	// FCHidden (W_h) and FCEncoder (W_e) are [H, H] in PyTorch's [out, in]
	// layout; Bahdanau only.
	FCHidden, FCEncoder *builder.Tensor
	// AttnFC is W_a, [H, H] [out, in]; Luong general and concat.
	AttnFC *builder.Tensor
	// AttnVector is w, [1, H]: decoder.weight (Bahdanau) or
	// decoder.attention.weight (Luong concat).
	AttnVector *builder.Tensor
	// ClassifierW is [Vt, H] (Bahdanau) or [Vt, 2H] (Luong); ClassifierB is [Vt].
	ClassifierW, ClassifierB *builder.Tensor
}

// Options controls FromStateDict.
type Options struct {
	// Arch, when set, must agree with the architecture the keys imply.
	Arch Arch
	// AllowNonFinite accepts weights that hold NaN or Inf.
	AllowNonFinite bool
}

// ignoredKeys are parameters the article defines but never uses.
var ignoredKeys = map[string]bool{
	"decoder.attn_combine.weight": true,
	"decoder.attn_combine.bias":   true,
}

var lstmKey = regexp.MustCompile(`^(encoder|decoder)\.lstm\.(weight_ih|weight_hh|bias_ih|bias_hh)_l(\d+)$`)

// FromStateDict checks a state_dict against the spec's checkpoint layout and
// converts it. float32 tensors' data is shared with the returned Weights,
// not copied: do not modify either while the other is in use. It returns notes for the user (ignored keys, converted
// dtypes) beside the weights. Errors name the key at fault, its shape and
// the expected shape.
func FromStateDict(tensors map[string]*builder.Tensor, opt Options) (*Weights, []string, error) {
	var notes []string
	keys := make([]string, 0, len(tensors))
	for k := range tensors {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	cfg, err := inferConfig(tensors, keys)
	if err != nil {
		return nil, nil, err
	}
	if opt.Arch != "" && opt.Arch != cfg.Arch {
		return nil, nil, fmt.Errorf("--arch %s disagrees with the checkpoint: its keys (%s) are those of a %s model", opt.Arch, archEvidence(cfg.Arch), cfg.Arch)
	}

	expected := expectedShapes(cfg)
	for _, k := range keys {
		if ignoredKeys[k] {
			notes = append(notes, fmt.Sprintf("ignoring %s: the article defines it but never uses it", k))
			continue
		}
		if _, ok := expected[k]; !ok {
			return nil, nil, fmt.Errorf("checkpoint has an unexpected key %s %v: not part of a %s model (H=%d, L=%d)", k, tensors[k].Dims, cfg.Arch, cfg.Hidden, cfg.Layers)
		}
	}
	names := make([]string, 0, len(expected))
	for k := range expected {
		names = append(names, k)
	}
	sort.Strings(names)
	// float32 tensors are used as they are: their Raw bytes are shared, not
	// decoded and re-encoded, so that converting a checkpoint of N bytes
	// costs N more bytes only for the LSTM weights (reordered) and the two
	// small H x H matrices some graphs transpose.
	vals := make(map[string]*builder.Tensor, len(names))
	converted := map[builder.DataType][]string{}
	for _, k := range names {
		want := expected[k]
		t, ok := tensors[k]
		if !ok {
			return nil, nil, fmt.Errorf("checkpoint is missing key %s (expected shape %v, %s) for a %s model", k, want.dims, want.what, cfg.Arch)
		}
		if !slices.Equal(t.Dims, want.dims) {
			return nil, nil, fmt.Errorf("checkpoint key %s: shape %v, expected %v (%s)", k, t.Dims, want.dims, want.what)
		}
		var ft *builder.Tensor
		if t.DType == builder.Float {
			if n := builder.NumElements(t.Dims); int64(len(t.Raw)) != 4*n {
				return nil, nil, fmt.Errorf("checkpoint key %s: %d bytes of float32 data for shape %v, expected %d", k, len(t.Raw), t.Dims, 4*n)
			}
			ft = &builder.Tensor{DType: builder.Float, Dims: append([]int64{}, t.Dims...), Raw: t.Raw}
		} else {
			v, err := t.ToFloat32()
			if err != nil {
				return nil, nil, fmt.Errorf("checkpoint key %s: dtype %v, expected float32", k, t.DType)
			}
			converted[t.DType] = append(converted[t.DType], k)
			ft = builder.FloatTensor(t.Dims, v)
		}
		if !opt.AllowNonFinite {
			if n, first, v := countNonFiniteRaw(ft.Raw); n > 0 {
				return nil, nil, fmt.Errorf("checkpoint key %s: %d non-finite values (first at flat index %d: %v); pass --allow-nonfinite to export anyway", k, n, first, v)
			}
		}
		vals[k] = ft
	}
	for _, dt := range []builder.DataType{builder.Float16, builder.BFloat16, builder.Double} {
		if keys := converted[dt]; len(keys) > 0 {
			notes = append(notes, conversionNote(dt, keys))
		}
	}
	return assemble(cfg, vals), notes, nil
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

// inferConfig reads the architecture and sizes from the keys and shapes.
func inferConfig(t map[string]*builder.Tensor, keys []string) (Config, error) {
	var cfg Config
	dims2 := func(k string) ([]int64, error) {
		v, ok := t[k]
		if !ok {
			return nil, fmt.Errorf("checkpoint is missing key %s: not an attention seq2seq state_dict (expected encoder.* and decoder.* keys as in the spec)", k)
		}
		if len(v.Dims) != 2 {
			return nil, fmt.Errorf("checkpoint key %s: shape %v, expected 2 dimensions", k, v.Dims)
		}
		return v.Dims, nil
	}
	src, err := dims2("encoder.embedding.weight")
	if err != nil {
		return cfg, err
	}
	tgt, err := dims2("decoder.embedding.weight")
	if err != nil {
		return cfg, err
	}
	cfg.SrcVocab, cfg.Hidden, cfg.TgtVocab = int(src[0]), int(src[1]), int(tgt[0])
	if tgt[1] != src[1] {
		return cfg, fmt.Errorf("checkpoint key decoder.embedding.weight: shape %v, expected [%d %d] (Vt x H, H=%d from encoder.embedding.weight)", tgt, tgt[0], src[1], src[1])
	}
	layers := map[string]int{}
	for _, k := range keys {
		if m := lstmKey.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[3])
			if n+1 > layers[m[1]] {
				layers[m[1]] = n + 1
			}
		}
	}
	if layers["encoder"] == 0 {
		return cfg, fmt.Errorf("checkpoint has no encoder.lstm.weight_ih_l0: not an attention seq2seq state_dict")
	}
	if layers["decoder"] != layers["encoder"] {
		return cfg, fmt.Errorf("checkpoint has %d encoder LSTM layers but %d decoder layers: they must be equal (the decoder starts from the encoder's final state)", layers["encoder"], layers["decoder"])
	}
	cfg.Layers = layers["encoder"]
	_, fcHidden := t["decoder.fc_hidden.weight"]
	_, attnFC := t["decoder.attention.fc.weight"]
	_, attnW := t["decoder.attention.weight"]
	switch {
	case fcHidden:
		cfg.Arch = Bahdanau
	case attnFC && attnW:
		cfg.Arch = LuongConcat
	case attnFC:
		cfg.Arch = LuongGeneral
	case attnW:
		return cfg, fmt.Errorf("checkpoint has decoder.attention.weight without decoder.attention.fc.weight: Luong concat needs both")
	default:
		cfg.Arch = LuongDot
	}
	return cfg, cfg.Validate()
}

func archEvidence(a Arch) string {
	switch a {
	case Bahdanau:
		return "decoder.fc_hidden.weight, decoder.fc_encoder.weight, decoder.weight"
	case LuongConcat:
		return "decoder.attention.fc.weight and decoder.attention.weight"
	case LuongGeneral:
		return "decoder.attention.fc.weight, no decoder.attention.weight"
	}
	return "no decoder.fc_hidden.* and no decoder.attention.*"
}

type shapeSpec struct {
	dims []int64
	what string
}

// expectedShapes lists every key a model of cfg has, with its shape.
func expectedShapes(cfg Config) map[string]shapeSpec {
	H, Vs, Vt := int64(cfg.Hidden), int64(cfg.SrcVocab), int64(cfg.TgtVocab)
	m := map[string]shapeSpec{
		"encoder.embedding.weight":  {[]int64{Vs, H}, "Vs x H"},
		"decoder.embedding.weight":  {[]int64{Vt, H}, "Vt x H"},
		"decoder.classifier.weight": {[]int64{Vt, H}, "Vt x H for bahdanau"},
		"decoder.classifier.bias":   {[]int64{Vt}, "Vt"},
	}
	for _, part := range []string{"encoder", "decoder"} {
		for k := 0; k < cfg.Layers; k++ {
			in, what := H, "4H x H"
			if part == "decoder" && k == 0 && cfg.Arch == Bahdanau {
				in, what = 2*H, "4H x 2H: bahdanau's layer 0 input is [embedding; context]"
			}
			m[fmt.Sprintf("%s.lstm.weight_ih_l%d", part, k)] = shapeSpec{[]int64{4 * H, in}, what}
			m[fmt.Sprintf("%s.lstm.weight_hh_l%d", part, k)] = shapeSpec{[]int64{4 * H, H}, "4H x H"}
			m[fmt.Sprintf("%s.lstm.bias_ih_l%d", part, k)] = shapeSpec{[]int64{4 * H}, "4H"}
			m[fmt.Sprintf("%s.lstm.bias_hh_l%d", part, k)] = shapeSpec{[]int64{4 * H}, "4H"}
		}
	}
	switch cfg.Arch {
	case Bahdanau:
		m["decoder.fc_hidden.weight"] = shapeSpec{[]int64{H, H}, "H x H"}
		m["decoder.fc_encoder.weight"] = shapeSpec{[]int64{H, H}, "H x H"}
		m["decoder.weight"] = shapeSpec{[]int64{1, H}, "1 x H"}
	default:
		m["decoder.classifier.weight"] = shapeSpec{[]int64{Vt, 2 * H}, "Vt x 2H for luong"}
		if cfg.Arch != LuongDot {
			m["decoder.attention.fc.weight"] = shapeSpec{[]int64{H, H}, "H x H"}
		}
		if cfg.Arch == LuongConcat {
			m["decoder.attention.weight"] = shapeSpec{[]int64{1, H}, "1 x H"}
		}
	}
	return m
}

// countNonFiniteRaw is countNonFinite on little-endian float32 bytes; it
// also returns the first non-finite value.
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

// assemble builds Weights from checked float32 tensors, sharing their data.
func assemble(cfg Config, v map[string]*builder.Tensor) *Weights {
	H := int64(cfg.Hidden)
	t2 := func(k string, dims ...int64) *builder.Tensor {
		return &builder.Tensor{DType: builder.Float, Dims: dims, Raw: v[k].Raw}
	}
	w := &Weights{
		Config:       cfg,
		SrcEmbedding: t2("encoder.embedding.weight", int64(cfg.SrcVocab), H),
		TgtEmbedding: t2("decoder.embedding.weight", int64(cfg.TgtVocab), H),
		ClassifierB:  t2("decoder.classifier.bias", int64(cfg.TgtVocab)),
	}
	for _, part := range []string{"encoder", "decoder"} {
		layers := make([]LSTMLayer, cfg.Layers)
		for k := range layers {
			p := fmt.Sprintf("%s.lstm.%%s_l%d", part, k)
			layers[k] = convertLSTMLayerRaw(H,
				v[fmt.Sprintf(p, "weight_ih")].Raw, v[fmt.Sprintf(p, "weight_hh")].Raw,
				v[fmt.Sprintf(p, "bias_ih")].Raw, v[fmt.Sprintf(p, "bias_hh")].Raw)
		}
		if part == "encoder" {
			w.Encoder = layers
		} else {
			w.Decoder = layers
		}
	}
	switch cfg.Arch {
	case Bahdanau:
		w.FCHidden = t2("decoder.fc_hidden.weight", H, H)
		w.FCEncoder = t2("decoder.fc_encoder.weight", H, H)
		w.AttnVector = t2("decoder.weight", 1, H)
		w.ClassifierW = t2("decoder.classifier.weight", int64(cfg.TgtVocab), H)
	default:
		w.ClassifierW = t2("decoder.classifier.weight", int64(cfg.TgtVocab), 2*H)
		if cfg.Arch != LuongDot {
			w.AttnFC = t2("decoder.attention.fc.weight", H, H)
		}
		if cfg.Arch == LuongConcat {
			w.AttnVector = t2("decoder.attention.weight", 1, H)
		}
	}
	return w
}

// pytorchToONNXGates maps ONNX's gate blocks (i, o, f, c) to PyTorch's
// block index (i=0, f=1, g=2, o=3).
var pytorchToONNXGates = [4]int{0, 3, 1, 2}

// ReorderGates turns a PyTorch LSTM parameter of 4H rows (gates i, f, g, o,
// each H rows of cols values) into ONNX's gate order i, o, f, c. This is the
// one place where attnx repacks LSTM weights.
func ReorderGates(p []float32, hidden, cols int) []float32 {
	out := make([]float32, 0, len(p))
	block := hidden * cols
	for _, src := range pytorchToONNXGates {
		out = append(out, p[src*block:(src+1)*block]...)
	}
	return out
}

// ConvertLSTMLayer converts one PyTorch LSTM layer (weight_ih [4H, in],
// weight_hh [4H, H], bias_ih and bias_hh [4H]) into ONNX's W, R and B.
func ConvertLSTMLayer(hidden int64, wih, whh, bih, bhh []float32) LSTMLayer {
	H := int(hidden)
	in := len(wih) / (4 * H)
	b := append(ReorderGates(bih, H, 1), ReorderGates(bhh, H, 1)...)
	return LSTMLayer{
		W: builder.FloatTensor([]int64{1, 4 * hidden, int64(in)}, ReorderGates(wih, H, in)),
		R: builder.FloatTensor([]int64{1, 4 * hidden, hidden}, ReorderGates(whh, H, H)),
		B: builder.FloatTensor([]int64{1, 8 * hidden}, b),
	}
}

// reorderGatesRaw is ReorderGates on float32 bytes, appended to dst: the
// gate blocks are copied as they are, without decoding.
func reorderGatesRaw(dst, p []byte, hidden, cols int) []byte {
	block := 4 * hidden * cols
	for _, src := range pytorchToONNXGates {
		dst = append(dst, p[src*block:(src+1)*block]...)
	}
	return dst
}

// convertLSTMLayerRaw is ConvertLSTMLayer on float32 bytes: one new buffer
// per ONNX tensor, nothing decoded.
func convertLSTMLayerRaw(hidden int64, wih, whh, bih, bhh []byte) LSTMLayer {
	H := int(hidden)
	in := len(wih) / (4 * 4 * H)
	b := reorderGatesRaw(make([]byte, 0, 2*len(bih)), bih, H, 1)
	b = reorderGatesRaw(b, bhh, H, 1)
	return LSTMLayer{
		W: &builder.Tensor{DType: builder.Float, Dims: []int64{1, 4 * hidden, int64(in)}, Raw: reorderGatesRaw(make([]byte, 0, len(wih)), wih, H, in)},
		R: &builder.Tensor{DType: builder.Float, Dims: []int64{1, 4 * hidden, hidden}, Raw: reorderGatesRaw(make([]byte, 0, len(whh)), whh, H, H)},
		B: &builder.Tensor{DType: builder.Float, Dims: []int64{1, 8 * hidden}, Raw: b},
	}
}

// String summarises the configuration, as in "bahdanau H=64 L=1 Vs=40 Vt=14".
func (c Config) String() string {
	return strings.Join([]string{string(c.Arch), "H=" + strconv.Itoa(c.Hidden), "L=" + strconv.Itoa(c.Layers),
		"Vs=" + strconv.Itoa(c.SrcVocab), "Vt=" + strconv.Itoa(c.TgtVocab)}, " ")
}
