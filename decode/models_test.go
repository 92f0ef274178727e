package decode_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/bench"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/ops"
)

// needORT initialises ONNX Runtime; see testenv.ORT for an absent library.
func needORT(tb testing.TB) {
	tb.Helper()
	testenv.ORT(tb, onnxrun.Init())
}

// testBackend runs the decoding core's suite on ONNX Runtime where the
// build has it (its IoBinding is what the allocation tests check), and on
// the native backend in a build without cgo (CGO_ENABLED=0 go test).
var testBackend = map[bool]string{true: onnxrun.BackendORT, false: onnxrun.BackendGo}[onnxrun.HasORT]

// pair is an opened encoder/decoder pair and its decode.Model.
type pair struct {
	name     string
	enc, dec *onnxrun.Session
	m        *decode.Model
	vs, vt   int
}

func open(tb testing.TB, name string, enc, dec *builder.Model, vs, vt int) *pair {
	tb.Helper()
	var ss []*onnxrun.Session
	for _, m := range []*builder.Model{enc, dec} {
		data, err := onnxfile.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		s, err := onnxrun.OpenBytes(data, onnxrun.Options{IntraOpThreads: 1, Backend: testBackend})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		ss = append(ss, s)
	}
	m, err := decode.NewModel(ss[0], ss[1], decode.Dims{})
	if err != nil {
		tb.Fatal(err)
	}
	return &pair{name: name, enc: ss[0], dec: ss[1], m: m, vs: vs, vt: vt}
}

// lstmPair builds attnx's own graphs (LSTM, states hidden and cell) of a
// random model.
func lstmPair(tb testing.TB, arch attention.Arch, hidden, layers, vs, vt int, seed uint64) *pair {
	tb.Helper()
	needORT(tb)
	sd, err := bench.RandomStateDict(attention.Config{Arch: arch, Hidden: hidden, Layers: layers, SrcVocab: vs, TgtVocab: vt}, seed)
	if err != nil {
		tb.Fatal(err)
	}
	w, _, err := attention.FromStateDict(sd, attention.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	enc, err := attention.Encoder(w, attention.BuildOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	dec, err := attention.Decoder(w, attention.BuildOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return open(tb, fmt.Sprintf("lstm-%s-L%d", arch, layers), enc, dec, vs, vt)
}

// gruPair builds a GRU encoder and a Luong-dot GRU decoder of L layers with
// random weights: the spec's interface without cell, next_cell or an
// encoder cell output.
func gruPair(tb testing.TB, hidden, layers, vs, vt int, seed uint64) *pair {
	tb.Helper()
	needORT(tb)
	r := rand.New(rand.NewPCG(seed, 3))
	H, L := int64(hidden), layers
	rnd := func(g *builder.Graph, name string, dims ...int64) *builder.Value {
		v := make([]float32, builder.NumElements(dims))
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.4)
		}
		return g.Init(name, builder.FloatTensor(dims, v))
	}
	ints := func(g *builder.Graph, v ...int64) *builder.Value { return ops.ConstInt64s(g, v...) }
	// stack runs L GRU layers over x [seq, batch, H] from h0 [L, batch, H]
	// (nil: zeros), returning the top Y [seq, batch, H] and [L, batch, H].
	stack := func(g *builder.Graph, prefix string, x, h0, lens *builder.Value) (*builder.Value, *builder.Value) {
		var finals []*builder.Value
		for l := 0; l < L; l++ {
			opts := ops.GRUOpts{LinearBeforeReset: true, RNNOpts: ops.RNNOpts{
				B: rnd(g, fmt.Sprintf("%s.B%d", prefix, l), 1, 6*H), SequenceLens: lens}}
			if h0 != nil {
				opts.InitialH = ops.Unsqueeze(ops.Gather(h0, ops.ScalarInt64(g, int64(l)), 0), ints(g, 0))
			}
			y, yh := ops.GRU(x, rnd(g, fmt.Sprintf("%s.W%d", prefix, l), 1, 3*H, H), rnd(g, fmt.Sprintf("%s.R%d", prefix, l), 1, 3*H, H), opts)
			x = ops.Squeeze(y, ints(g, 1))
			finals = append(finals, yh)
		}
		if L == 1 {
			return x, finals[0]
		}
		return x, ops.Concat(0, finals...)
	}
	mask := func(g *builder.Graph, seq, lens *builder.Value) *builder.Value {
		n := ops.Squeeze(ops.Shape(seq, ops.ShapeOpts{Start: 1, End: ops.Int(2)}), ints(g, 0))
		pos := ops.Range(ops.ScalarInt64(g, 0), n, ops.ScalarInt64(g, 1))
		return ops.Less(pos, ops.Unsqueeze(lens, ints(g, 1)))
	}

	ge := builder.New("toy_gru_encoder")
	ids := ge.Input(attention.InSourceIDs, builder.Int64, builder.Dims(attention.DimBatch, attention.DimSrcLen))
	lens := ge.Input(attention.InSourceLengths, builder.Int64, builder.Dims(attention.DimBatch))
	x := ops.Gather(rnd(ge, "E_src", int64(vs), H), ops.Transpose(ids, []int64{1, 0}), 0)
	y, h := stack(ge, "enc", x, nil, ops.Cast(lens, builder.Int32))
	y = ops.Transpose(y, []int64{1, 0, 2})
	ge.Output(attention.OutEncoder, ops.Where(ops.Unsqueeze(mask(ge, y, lens), ints(ge, 2)), y, ops.ScalarFloat(ge, 0)))
	ge.Output(attention.OutHidden, h)

	gd := builder.New("toy_gru_decoder")
	in := gd.Input(attention.InInputIDs, builder.Int64, builder.Dims(attention.DimBatch))
	hid := gd.Input(attention.InHidden, builder.Float, builder.Dims(L, attention.DimBatch, hidden))
	enc := gd.Input(attention.InEncoderOutputs, builder.Float, builder.Dims(attention.DimBatch, attention.DimSrcLen, hidden))
	dl := gd.Input(attention.InSourceLengths, builder.Int64, builder.Dims(attention.DimBatch))
	e := ops.Unsqueeze(ops.Gather(rnd(gd, "E_tgt", int64(vt), H), in, 0), ints(gd, 0))
	_, next := stack(gd, "dec", e, hid, nil)
	q := ops.Gather(next, ops.ScalarInt64(gd, int64(L-1)), 0)
	score := ops.Squeeze(ops.MatMul(enc, ops.Unsqueeze(q, ints(gd, -1))), ints(gd, -1))
	a := ops.Softmax(ops.Where(mask(gd, enc, dl), score, ops.ScalarFloat(gd, float32(math.Inf(-1)))), -1)
	ctx := ops.Squeeze(ops.MatMul(ops.Unsqueeze(a, ints(gd, 1)), enc), ints(gd, 1))
	logits := ops.Gemm(ops.Concat(-1, q, ctx), rnd(gd, "W_cls", int64(vt), 2*H), rnd(gd, "b_cls", int64(vt)), ops.GemmOpts{TransB: true})
	gd.Output(attention.OutLogProbs, ops.LogSoftmax(logits, -1))
	gd.Output(attention.OutNextHidden, next)
	gd.Output(attention.OutAttention, a)
	return open(tb, fmt.Sprintf("gru-L%d", layers), builder.NewModel(ge), builder.NewModel(gd), vs, vt)
}

// run decodes one source row alone (batch 1) with plain Session.Run,
// an implementation of the step loop independent of package decode: it
// feeds first, then whatever next returns after each step, until next says
// stop.
func (p *pair) run(tb testing.TB, src []int64, first int64, next func(lp, att []float32) (int64, bool)) {
	tb.Helper()
	n := int64(len(src))
	lens := onnxrun.NewInt64([]int64{1}, []int64{n})
	out, err := p.enc.Run(map[string]*onnxrun.Tensor{
		attention.InSourceIDs: onnxrun.NewInt64([]int64{1, n}, src), attention.InSourceLengths: lens,
	})
	if err != nil {
		tb.Fatal(err)
	}
	feed := map[string]*onnxrun.Tensor{attention.InEncoderOutputs: out[attention.OutEncoder], attention.InSourceLengths: lens}
	for _, s := range p.m.States() {
		feed[s] = out[s]
	}
	for id, more := first, true; more; {
		feed[attention.InInputIDs] = onnxrun.NewInt64([]int64{1}, []int64{id})
		res, err := p.dec.Run(feed)
		if err != nil {
			tb.Fatal(err)
		}
		lp, _ := res[attention.OutLogProbs].Float32s()
		at, _ := res[attention.OutAttention].Float32s()
		for _, s := range p.m.States() {
			feed[s] = res["next_"+s]
		}
		id, more = next(lp, at)
	}
}

// forced feeds inputs and returns the last step's log_probs.
func (p *pair) forced(tb testing.TB, src, inputs []int64) []float32 {
	var last []float32
	i := 0
	p.run(tb, src, inputs[0], func(lp, _ []float32) (int64, bool) {
		last, i = lp, i+1
		if i == len(inputs) {
			return 0, false
		}
		return inputs[i], true
	})
	return last
}

// loneGreedy is the spec's greedy decoding of one row alone.
func (p *pair) loneGreedy(tb testing.TB, src []int64, sos, eos int64, maxLen int) (tokens []int64, attn [][]float32) {
	tb.Helper()
	if maxLen < 1 {
		return nil, nil
	}
	p.run(tb, src, sos, func(lp, at []float32) (int64, bool) {
		best := 0
		for i, x := range lp {
			if x > lp[best] {
				best = i
			}
		}
		tokens, attn = append(tokens, int64(best)), append(attn, at)
		return int64(best), int64(best) != eos && len(tokens) < maxLen
	})
	return tokens, attn
}

// randomRows returns n rows of ids in [0, vs) with lengths in [1, maxLen].
func randomRows(r *rand.Rand, n, vs, maxLen int) [][]int64 {
	rows := make([][]int64, n)
	for i := range rows {
		rows[i] = make([]int64, 1+r.IntN(maxLen))
		for j := range rows[i] {
			rows[i][j] = int64(r.IntN(vs))
		}
	}
	return rows
}

// within reports whether got and want agree within the spec's tolerance.
func within(got, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5+1.3e-6*math.Abs(float64(want[i])) {
			return false
		}
	}
	return true
}
