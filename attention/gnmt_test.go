package attention

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// gnmtReference is testdata/toolkits/gnmt_parity.py's dump: the values
// the repository's own GNMT modules compute on the committed checkpoint.
type gnmtReference struct {
	SourceIDs      [][]int64 `json:"source_ids"`
	SourceLengths  []int64   `json:"source_lengths"`
	EncoderOutputs []float32 `json:"encoder_outputs"`
	EncoderDims    []int64   `json:"encoder_dims"`
	Steps          []struct {
		InputIDs   []int64   `json:"input_ids"`
		Hidden     []float32 `json:"hidden"`
		NextHidden []float32 `json:"next_hidden"`
		LogProbs   []float32 `json:"log_probs"`
		Attention  []float32 `json:"attention"`
	} `json:"steps"`
}

// gnmtFixture loads a GNMT fixture's checkpoint as weights, with its
// reference dump.
func gnmtFixture(t *testing.T, kind string) (*GNMTWeights, *gnmtReference) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "toolkits", "gnmt-"+kind)
	path := filepath.Join(dir, "model_best.pth")
	sd, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := checkpoint.ReadGNMT(sd.Origin, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := GNMTFromStateDict(sd.Tensors, g.HiddenSize, g.NumLayers)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "parity", "steps.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref gnmtReference
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	return w, &ref
}

// gnmtStates splits the reference's flattened decoder hidden [2L, batch,
// H] (h0, c0, h1, c1, ...) into hidden and cell [L, batch, H]; nil is the
// zero state.
func gnmtStates(flat []float32, L, B, H int) (h, c []float32) {
	n := B * H
	h, c = make([]float32, L*n), make([]float32, L*n)
	if flat == nil {
		return h, c
	}
	for k := 0; k < L; k++ {
		copy(h[k*n:], flat[2*k*n:(2*k+1)*n])
		copy(c[k*n:], flat[(2*k+1)*n:(2*k+2)*n])
	}
	return h, c
}

// TestGNMTParity: attnx's GNMT encoder and decoder step, built from the
// checkpoints DeepLearningExamples' and MLPerf's train.py saved, give the
// repositories' own modules' values (gnmt_parity.py) within the spec's
// float32 tolerance on the native evaluator and ONNX Runtime: the encoder
// outputs within each length, and each decoder step fed the reference's
// own token, states and encoder outputs: its log-probs, attention scores
// and next states; each step's argmax is the reference's next token.
func TestGNMTParity(t *testing.T) {
	for _, kind := range []string{"dle", "mlperf"} {
		w, ref := gnmtFixture(t, kind)
		// DLE's model shares its embeddings (its default), MLPerf's was
		// trained with --no-share-embedding.
		if shared := w.SrcEmbedding == w.TgtEmbedding; shared != (kind == "dle") {
			t.Errorf("%s: embeddings shared %v", kind, shared)
		}
		encModel, err := GNMTEncoder(w)
		if err != nil {
			t.Fatal(err)
		}
		decModel, err := GNMTDecoder(w)
		if err != nil {
			t.Fatal(err)
		}
		var encBytes, decBytes []byte
		if encBytes, err = onnxfile.Marshal(encModel); err != nil {
			t.Fatal(err)
		}
		if decBytes, err = onnxfile.Marshal(decModel); err != nil {
			t.Fatal(err)
		}
		for _, backend := range []string{onnxrun.BackendGo, onnxrun.BackendORT} {
			t.Run(kind+"/"+backend, func(t *testing.T) {
				if err := onnxrun.Ready(backend); err != nil {
					if os.Getenv("CI") != "" {
						t.Fatalf("ONNX Runtime is required in CI: %v", err)
					}
					t.Skipf("ONNX Runtime not available: %v", err)
				}
				open := func(data []byte) *onnxrun.Session {
					s, err := onnxrun.OpenBytes(data, onnxrun.Options{Backend: backend, IntraOpThreads: 1})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s
				}
				gnmtCheck(t, w, ref, open(encBytes), open(decBytes))
			})
		}
	}
}

func gnmtCheck(t *testing.T, w *GNMTWeights, ref *gnmtReference, enc, dec *onnxrun.Session) {
	B, S, H, L := len(ref.SourceIDs), len(ref.SourceIDs[0]), w.Hidden, w.Layers
	if !slices.Equal(ref.EncoderDims, []int64{int64(B), int64(S), int64(H)}) {
		t.Fatalf("reference encoder dims %v, want [%d %d %d]", ref.EncoderDims, B, S, H)
	}
	ids := slices.Concat(ref.SourceIDs...)
	lens := onnxrun.NewInt64([]int64{int64(B)}, ref.SourceLengths)
	out, err := enc.Run(map[string]*onnxrun.Tensor{InSourceIDs: onnxrun.NewInt64([]int64{int64(B), int64(S)}, ids), InSourceLengths: lens})
	if err != nil {
		t.Fatal(err)
	}
	maxAbs := map[string]float64{}
	check := func(what string, got *onnxrun.Tensor, want []float32, keep func(i int) bool) {
		t.Helper()
		g, err := got.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(g) != len(want) {
			t.Fatalf("%s: %d values, reference %d", what, len(g), len(want))
		}
		var gv, wv []float32
		for i := range g {
			if keep == nil || keep(i) {
				gv, wv = append(gv, g[i]), append(wv, want[i])
			}
		}
		r := compare.Float32(gv, wv, []int64{int64(len(gv))}, compare.Float32Tol)
		if !r.OK {
			t.Errorf("%s: %s", what, r)
		}
		name, _, _ := strings.Cut(what, "@")
		maxAbs[name] = max(maxAbs[name], r.MaxAbsErr)
	}
	// Within each length the encoder is exact; past it attnx has zeros
	// where PyTorch has the upper layers run over padding.
	valid := func(i int) bool { return int64(i/H%S) < ref.SourceLengths[i/(S*H)] }
	check("encoder_outputs", out[OutEncoder], ref.EncoderOutputs, valid)
	e, _ := out[OutEncoder].Float32s()
	for i, v := range e {
		if !valid(i) && v != 0 {
			t.Fatalf("encoder_outputs[%d] = %g past its length, want 0", i, v)
		}
	}
	zeros := make([]float32, L*B*H)
	check("hidden", out[OutHidden], zeros, nil)
	check("cell", out[OutCell], zeros, nil)

	encRef := onnxrun.NewFloat32(ref.EncoderDims, ref.EncoderOutputs)
	stateDims := []int64{int64(L), int64(B), int64(H)}
	for k, st := range ref.Steps {
		h, c := gnmtStates(st.Hidden, L, B, H)
		o, err := dec.Run(map[string]*onnxrun.Tensor{InInputIDs: onnxrun.NewInt64([]int64{int64(B)}, st.InputIDs),
			InHidden: onnxrun.NewFloat32(stateDims, h), InCell: onnxrun.NewFloat32(stateDims, c),
			InEncoderOutputs: encRef, InSourceLengths: lens})
		if err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		at := "@" + string(rune('0'+k))
		check("log_probs"+at, o[OutLogProbs], st.LogProbs, nil)
		check("attention"+at, o[OutAttention], st.Attention, nil)
		nh, nc := gnmtStates(st.NextHidden, L, B, H)
		check("next_hidden"+at, o[OutNextHidden], nh, nil)
		check("next_cell"+at, o[OutNextCell], nc, nil)
		if k+1 < len(ref.Steps) {
			lp, _ := o[OutLogProbs].Float32s()
			V := len(lp) / B
			for b := 0; b < B; b++ {
				row := lp[b*V : (b+1)*V]
				if best := int64(slices.Index(row, slices.Max(row))); best != ref.Steps[k+1].InputIDs[b] {
					t.Errorf("step %d row %d: argmax %d, the reference's next token %d", k, b, best, ref.Steps[k+1].InputIDs[b])
				}
			}
		}
	}
	t.Logf("max |attnx - PyTorch| over %d steps: %v", len(ref.Steps), maxAbs)
}

// TestGNMTFromStateDictRefuses: a state_dict that is not GNMT v2's of
// the given shape is an error naming the key and the shape expected.
func TestGNMTFromStateDictRefuses(t *testing.T) {
	dir := filepath.Join("..", "testdata", "toolkits", "gnmt-mlperf")
	sd, err := checkpoint.Load(filepath.Join(dir, "model_best.pth"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		edit           func(map[string]*builder.Tensor)
		hidden, layers int
		want           string
	}{
		{"one layer", nil, 32, 1, "hidden_size 32 and num_layers 1, want hidden_size >= 1 and num_layers >= 2"},
		{"wrong hidden", nil, 16, 3, "GNMT state_dict key encoder.embedder.weight: float32 [858 32], want float32 [vocab, 16]"},
		{"more layers", nil, 32, 4, "GNMT state_dict key encoder.rnn_layers.3.weight_ih_l0 is missing"},
		{"no normalize", func(m map[string]*builder.Tensor) { delete(m, gnmtAttn+"normalize_scalar") }, 32, 3,
			"normalize_scalar is missing (expected float32 [1]): GNMT's attention is BahdanauAttention(normalize=True)"},
		{"classifier rows", func(m map[string]*builder.Tensor) {
			c := *m[gnmtClass+"bias"]
			c.Dims, c.Raw = []int64{c.Dims[0] - 1}, c.Raw[4:]
			m[gnmtClass+"bias"] = &c
		}, 32, 3, "decoder.classifier.classifier.bias"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]*builder.Tensor{}
			for k, v := range sd.Tensors {
				m[k] = v
			}
			if c.edit != nil {
				c.edit(m)
			}
			_, err := GNMTFromStateDict(m, c.hidden, c.layers)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := GNMTFromStateDict(sd.Tensors, 32, 3); err != nil {
		t.Fatal(err)
	}
}

// TestGNMTGraphsRefuse: weights that do not hold together are an error
// from both builders naming what is wrong, never a panic.
func TestGNMTGraphsRefuse(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(w *GNMTWeights) *GNMTWeights
		want string
	}{
		{"nil", func(*GNMTWeights) *GNMTWeights { return nil }, "GNMT: no weights"},
		{"layers", func(w *GNMTWeights) *GNMTWeights { w.Decoder = w.Decoder[:1]; return w }, "with 3 encoder and 1 decoder layers besides att_rnn"},
		{"classifier", func(w *GNMTWeights) *GNMTWeights { w.ClassifierBias = nil; return w }, "GNMT classifier bias is missing (expected float32 [858])"},
		{"encoder direction", func(w *GNMTWeights) *GNMTWeights { w.Encoder[0] = w.Encoder[1]; return w }, "GNMT encoder layer 0"},
		{"decoder input", func(w *GNMTWeights) *GNMTWeights { w.AttRNN = w.Decoder[0]; return w }, "GNMT decoder layer 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, _ := gnmtFixture(t, "mlperf")
			w = c.edit(w)
			for name, build := range map[string]func(*GNMTWeights) (*builder.Model, error){"encoder": GNMTEncoder, "decoder": GNMTDecoder} {
				if _, err := build(w); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), name+": ") {
					t.Errorf("%s: error %v, want %q", name, err, c.want)
				}
			}
		})
	}
}
