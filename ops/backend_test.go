package ops

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// backendDir holds the ONNX backend node tests (Debian's libonnx-testdata).
const backendDir = testenv.BackendData + "/node"

// onode gives typed access to the attributes of a backend case's node.
type onode struct{ onnxfile.Node }

// attr returns the attribute called name, or nil.
func (n onode) attr(name string) *onnxfile.Attr {
	if a, ok := n.Attrs[name]; ok {
		return &a
	}
	return nil
}

func (n onode) i(name string, def int64) int64 {
	if a := n.attr(name); a != nil {
		return a.Int
	}
	return def
}

func (n onode) s(name string) string {
	if a := n.attr(name); a != nil {
		return a.Str
	}
	return ""
}

func (n onode) fptr(name string) *float32 {
	if a := n.attr(name); a != nil {
		return Float(a.Float)
	}
	return nil
}

func (n onode) ints(name string) []int64 {
	if a := n.attr(name); a != nil {
		return a.Ints
	}
	return nil
}

func (n onode) strs(name string) []string {
	if a := n.attr(name); a != nil {
		return a.Strings
	}
	return nil
}

func (n onode) floats(name string) []float32 {
	if a := n.attr(name); a != nil {
		return a.Floats
	}
	return nil
}

// hasOut reports whether the node computes output k.
func (n onode) hasOut(k int) bool { return k < len(n.Outputs) && n.Outputs[k] != "" }

// bodyConst returns the value of the Constant node computing name in the
// graph attribute attr.
func (n onode) bodyConst(t *testing.T, attr, name string) *builder.Tensor {
	for _, bn := range n.Attrs[attr].Body {
		if bn.Op == "Constant" && bn.Outputs[0] == name {
			return bn.Attrs["value"].Tensor
		}
	}
	t.Fatalf("no Constant %q in %s", name, attr)
	return nil
}

// axesInput returns the axes input of a Squeeze/Unsqueeze case, made from
// the axes attribute for cases written before opset 13.
func axesInput(g *builder.Graph, n onode, in []*builder.Value) *builder.Value {
	if a := n.attr("axes"); a != nil {
		return ConstInt64s(g, a.Ints...)
	}
	return at(in, 1)
}

// at returns in[i], or nil past the end.
func at(in []*builder.Value, i int) *builder.Value {
	if i < len(in) {
		return in[i]
	}
	return nil
}

type buildFunc func(t *testing.T, g *builder.Graph, n onode, in []*builder.Value) []*builder.Value

type backendCase struct {
	names  []string // backend test directories
	consts []int    // node inputs made Constant nodes (from the test data), so inference can read them
	build  buildFunc
}

func un(f func(*builder.Value) *builder.Value) buildFunc {
	return func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{f(in[0])}
	}
}

func bin(f func(a, b *builder.Value) *builder.Value) buildFunc {
	return func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{f(in[0], in[1])}
	}
}

func vari(f func(...*builder.Value) *builder.Value) buildFunc {
	return func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{f(in...)}
	}
}

func rnnOpts(n onode, in []*builder.Value) RNNOpts {
	return RNNOpts{B: at(in, 3), SequenceLens: at(in, 4), InitialH: at(in, 5),
		HiddenSize: n.i("hidden_size", 0), Direction: n.s("direction"), Layout: n.i("layout", 0),
		Activations: n.strs("activations"), ActivationAlpha: n.floats("activation_alpha"),
		ActivationBeta: n.floats("activation_beta"), Clip: n.fptr("clip"),
		OmitY: !n.hasOut(0), OmitYH: !n.hasOut(1)}
}

// batchFirst runs a layout-1 recurrent case as layout 0 between Transposes
// (ONNX Runtime 1.24 refuses layout=1 models): X [B,S,I] -> [S,B,I], Y [S,D,B,H]
// -> [B,S,D,H], states [D,B,H] -> [B,D,H].
func batchFirst(o *RNNOpts, in []*builder.Value) {
	if o.Layout != 1 {
		return
	}
	o.Layout = 0
	in[0] = Transpose(in[0], []int64{1, 0, 2})
	if o.InitialH != nil {
		o.InitialH = Transpose(o.InitialH, []int64{1, 0, 2})
	}
}

func unBatchFirst(layout int64, outs []*builder.Value) []*builder.Value {
	if layout != 1 {
		return outs
	}
	for k, v := range outs {
		switch {
		case v == nil:
		case k == 0:
			outs[k] = Transpose(v, []int64{2, 0, 1, 3})
		default:
			outs[k] = Transpose(v, []int64{1, 0, 2})
		}
	}
	return outs
}

func matching(prefix string, exclude ...string) []string {
	entries, _ := os.ReadDir(backendDir)
	var out []string
outer:
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, x := range exclude {
			if strings.Contains(name, x) {
				continue outer
			}
		}
		out = append(out, name)
	}
	return out
}

var backendCases = []backendCase{
	{names: matching("test_lstm_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		o := LSTMOpts{RNNOpts: rnnOpts(n, in), InitialC: at(in, 6), P: at(in, 7), InputForget: n.i("input_forget", 0) == 1, OmitYC: !n.hasOut(2)}
		layout := o.Layout
		batchFirst(&o.RNNOpts, in)
		if o.InitialC != nil && layout == 1 {
			o.InitialC = Transpose(o.InitialC, []int64{1, 0, 2})
		}
		y, yh, yc := LSTM(in[0], in[1], in[2], o)
		return unBatchFirst(layout, []*builder.Value{y, yh, yc})
	}},
	{names: matching("test_gru_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		o := GRUOpts{RNNOpts: rnnOpts(n, in), LinearBeforeReset: n.i("linear_before_reset", 0) == 1}
		layout := o.Layout
		batchFirst(&o.RNNOpts, in)
		y, yh := GRU(in[0], in[1], in[2], o)
		return unBatchFirst(layout, []*builder.Value{y, yh})
	}},
	{names: matching("test_gather_", "elements"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Gather(in[0], in[1], n.i("axis", 0))}
	}},
	{names: matching("test_matmul_"), build: bin(MatMul)},
	{names: matching("test_gemm_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Gemm(in[0], in[1], at(in, 2), GemmOpts{Alpha: n.fptr("alpha"), Beta: n.fptr("beta"),
			TransA: n.i("transA", 0) == 1, TransB: n.i("transB", 0) == 1})}
	}},
	{names: []string{"test_add", "test_add_bcast", "test_add_uint8"}, build: bin(Add)},
	{names: []string{"test_sub", "test_sub_bcast", "test_sub_example"}, build: bin(Sub)},
	{names: []string{"test_mul", "test_mul_bcast", "test_mul_example"}, build: bin(Mul)},
	{names: []string{"test_div", "test_div_bcast", "test_div_example"}, build: bin(Div)},
	{names: []string{"test_pow", "test_pow_bcast_array", "test_pow_bcast_scalar", "test_pow_types_float32_int64", "test_pow_types_int64_int64"}, build: bin(Pow)},
	{names: []string{"test_tanh", "test_tanh_example"}, build: un(Tanh)},
	{names: []string{"test_sigmoid", "test_sigmoid_example"}, build: un(Sigmoid)},
	{names: []string{"test_relu"}, build: un(Relu)},
	{names: []string{"test_neg", "test_neg_example"}, build: un(Neg)},
	{names: []string{"test_exp", "test_exp_example"}, build: un(Exp)},
	{names: []string{"test_log", "test_log_example"}, build: un(Log)},
	{names: []string{"test_sqrt", "test_sqrt_example"}, build: un(Sqrt)},
	{names: []string{"test_abs"}, build: un(Abs)},
	{names: []string{"test_reciprocal", "test_reciprocal_example"}, build: un(Reciprocal)},
	{names: []string{"test_erf"}, build: un(Erf)},
	{names: []string{"test_identity"}, build: un(Identity)},
	{names: []string{"test_not_2d", "test_not_3d", "test_not_4d"}, build: un(Not)},
	{names: matching("test_and"), build: bin(And)},
	{names: matching("test_or"), build: bin(Or)},
	{names: []string{"test_equal", "test_equal_bcast"}, build: bin(Equal)},
	{names: []string{"test_less", "test_less_bcast"}, build: bin(Less)},
	{names: []string{"test_greater", "test_greater_bcast"}, build: bin(Greater)},
	{names: []string{"test_greater_equal", "test_greater_equal_bcast"}, build: bin(GreaterOrEqual)},
	{names: []string{"test_less_equal", "test_less_equal_bcast"}, build: bin(LessOrEqual)},
	{names: []string{"test_where_example", "test_where_long_example"}, build: func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Where(in[0], in[1], in[2])}
	}},
	{names: matching("test_max_", "float16", "int16", "pool", "unpool"), build: vari(Max)},
	{names: matching("test_min_", "float16", "int16"), build: vari(Min)},
	{names: matching("test_softmax_", "expanded"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Softmax(in[0], n.i("axis", -1))}
	}},
	{names: matching("test_logsoftmax_", "expanded"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{LogSoftmax(in[0], n.i("axis", -1))}
	}},
	{names: matching("test_concat_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Concat(n.i("axis", 0), in...)}
	}},
	{names: matching("test_split_", "zero_size"), consts: []int{1}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return Split(in[0], at(in, 1), n.i("axis", 0), len(n.Outputs))
	}},
	{names: matching("test_slice"), consts: []int{1, 2, 3, 4}, build: func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Slice(in[0], in[1], in[2], at(in, 3), at(in, 4))}
	}},
	{names: matching("test_squeeze"), consts: []int{1}, build: func(_ *testing.T, g *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Squeeze(in[0], axesInput(g, n, in))}
	}},
	{names: matching("test_unsqueeze_"), consts: []int{1}, build: func(_ *testing.T, g *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Unsqueeze(in[0], axesInput(g, n, in))}
	}},
	{names: matching("test_reshape_"), consts: []int{1}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Reshape(in[0], in[1], ReshapeOpts{AllowZero: n.i("allowzero", 0) == 1})}
	}},
	{names: matching("test_transpose_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Transpose(in[0], n.ints("perm"))}
	}},
	{names: matching("test_expand_"), consts: []int{1}, build: bin(Expand)},
	{names: matching("test_shape"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		o := ShapeOpts{Start: n.i("start", 0)}
		if a := n.attr("end"); a != nil {
			o.End = Int(a.Int)
		}
		return []*builder.Value{Shape(in[0], o)}
	}},
	{names: []string{"test_cast_FLOAT_to_DOUBLE", "test_cast_DOUBLE_to_FLOAT"}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Cast(in[0], builder.DataType(n.i("to", 0)))}
	}},
	{names: matching("test_reduce_sum_", "square"), consts: []int{1}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{ReduceSum(in[0], at(in, 1), ReduceSumOpts{NoKeepDims: n.i("keepdims", 1) == 0, NoopWithEmptyAxes: n.i("noop_with_empty_axes", 0) == 1})}
	}},
	{names: matching("test_reduce_max_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{ReduceMax(in[0], ReduceOpts{Axes: n.ints("axes"), NoKeepDims: n.i("keepdims", 1) == 0})}
	}},
	{names: matching("test_reduce_mean_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{ReduceMean(in[0], ReduceOpts{Axes: n.ints("axes"), NoKeepDims: n.i("keepdims", 1) == 0})}
	}},
	{names: matching("test_argmax_"), build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{ArgMax(in[0], n.i("axis", 0), ArgOpts{NoKeepDims: n.i("keepdims", 1) == 0, SelectLastIndex: n.i("select_last_index", 0) == 1})}
	}},
	{names: []string{"test_range_float_type_positive_delta", "test_range_int32_type_negative_delta"}, build: func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Range(in[0], in[1], in[2])}
	}},
	{names: []string{"test_constantofshape_float_ones", "test_constantofshape_int_zeros"}, consts: []int{0}, build: func(t *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{ConstantOfShape(in[0], n.Attrs["value"].Tensor)}
	}},
	{names: []string{"test_constant"}, build: func(t *testing.T, g *builder.Graph, n onode, _ []*builder.Value) []*builder.Value {
		return []*builder.Value{Constant(g, n.Attrs["value"].Tensor)}
	}},
	{names: []string{"test_constant_pad"}, consts: []int{1}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{Pad(in[0], in[1], PadOpts{ConstantValue: at(in, 2), Mode: n.s("mode")})}
	}},
	{names: []string{"test_if"}, build: func(t *testing.T, g *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		thenT, elseT := n.bodyConst(t, "then_branch", "then_out"), n.bodyConst(t, "else_branch", "else_out")
		return If(g, in[0],
			func(b *builder.Graph) []*builder.Value { return []*builder.Value{Constant(b, thenT)} },
			func(b *builder.Graph) []*builder.Value { return []*builder.Value{Constant(b, elseT)} })
	}},
	{names: []string{"test_loop11"}, build: func(t *testing.T, g *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		x := n.bodyConst(t, "body", "x")
		final, scans := Loop(g, in[0], in[1], in[2:], func(b *builder.Graph, iter, cond *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			xs := Constant(b, x)
			zero := ConstInt64s(b, 0)
			start := Unsqueeze(iter, zero)
			end := Unsqueeze(Add(iter, ScalarInt64(b, 1)), zero)
			y := Add(carried[0], Slice(xs, start, end, nil, nil))
			return Identity(cond), []*builder.Value{y}, []*builder.Value{Identity(y)}
		}, LoopOpts{})
		return append(final, scans...)
	}},
}

// loadTensor reads a TensorProto file.
func loadTensor(t *testing.T, path string) *builder.Tensor {
	t.Helper()
	tt, err := onnxfile.ReadTensorProto(path)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// toRuntime converts a builder tensor to a runtime tensor.
func toRuntime(t *testing.T, bt *builder.Tensor) *onnxrun.Tensor {
	t.Helper()
	rt, err := onnxrun.FromBuilder(bt)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// compareTensors checks got against want: rtol 1e-3, atol 1e-7 for floats,
// exact otherwise.
func compareTensors(got, want *onnxrun.Tensor) compare.Result {
	tol := compare.Options{RTol: 1e-3, ATol: 1e-7}
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return compare.Result{Err: fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)}
	}
	switch w := want.Data.(type) {
	case []float32:
		return compare.Float32(got.Data.([]float32), w, want.Shape, tol)
	case []float64:
		return compare.Float64(got.Data.([]float64), w, want.Shape, tol)
	case []int64:
		return compare.Exact(got.Data.([]int64), w, want.Shape)
	case []int32:
		return compare.Exact(got.Data.([]int32), w, want.Shape)
	case []bool:
		return compare.Exact(got.Data.([]bool), w, want.Shape)
	}
	if fmt.Sprint(got.Data) == fmt.Sprint(want.Data) {
		return compare.Result{OK: true}
	}
	return compare.Result{Err: fmt.Errorf("got %v, want %v", got.Data, want.Data)}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestBackendNodeCases builds each ONNX backend node test's operator with
// package ops, runs it in ONNX Runtime on the case's inputs and compares with
// the expected outputs. Every model is also checked with
// onnx.checker.check_model(full_check=True), which runs ONNX's own shape
// inference over the types ops inferred (written as value_info).
func TestBackendNodeCases(t *testing.T) {
	testenv.Backend(t, "node")
	testenv.ORT(t, onnxrun.Init())
	modelDir := t.TempDir()
	seen := 0
	for _, bc := range backendCases {
		if len(bc.names) == 0 {
			t.Errorf("a case list matched no backend test")
		}
		for _, name := range bc.names {
			seen++
			t.Run(name, func(t *testing.T) { runBackendCase(t, bc, name, modelDir) })
		}
	}
	t.Logf("%d backend cases", seen)
	checkModels(t, modelDir)
}

func runBackendCase(t *testing.T, bc backendCase, name, modelDir string) {
	dir := filepath.Join(backendDir, name)
	ref, err := onnxfile.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := onnxfile.GraphNodes(ref)
	if err != nil {
		t.Fatal(err)
	}
	node := onode{nodes[0]}
	declIn, declOut := onnxfile.GraphIO(ref)
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Strings(sets)
	if len(sets) == 0 {
		t.Fatal("no test data sets")
	}
	set := sets[0]
	inputsByName := map[string]*builder.Tensor{}
	declared := map[string]onnxfile.ValueType{}
	for i, vi := range declIn {
		inputsByName[vi.Name] = loadTensor(t, filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
		declared[vi.Name] = vi.Type
	}

	g := builder.New(name)
	var ins []*builder.Value
	feeds := map[string]*onnxrun.Tensor{}
	for j, inName := range node.Inputs {
		switch {
		case inName == "":
			ins = append(ins, nil)
		case contains(bc.consts, j):
			ins = append(ins, Constant(g, inputsByName[inName]))
		default:
			vt := declared[inName]
			ins = append(ins, g.Input(inName, vt.Elem, vt.Shape))
			feeds[inName] = toRuntime(t, inputsByName[inName])
		}
	}
	outs := bc.build(t, g, node, ins)
	want := make([]*builder.Tensor, len(declOut))
	for k, vo := range declOut {
		want[k] = loadTensor(t, filepath.Join(set, fmt.Sprintf("output_%d.pb", k)))
		idx := -1
		for j, o := range node.Outputs {
			if o == vo.Name {
				idx = j
			}
		}
		if idx < 0 || idx >= len(outs) || outs[idx] == nil {
			t.Fatalf("graph output %q is not computed by the node", vo.Name)
		}
		v := g.Output(vo.Name, outs[idx])
		if g.Err() != nil {
			break
		}
		// The inferred type must agree with the expected output.
		if v.Elem() != want[k].DType {
			t.Errorf("output %q: inferred %s, expected data is %v", vo.Name, v.Type(), want[k].DType)
		}
		if v.Rank() >= 0 && v.Rank() != len(want[k].Dims) {
			t.Errorf("output %q: inferred %s, expected shape %v", vo.Name, v.Type(), want[k].Dims)
		} else if dims, ok := v.Shape().Static(); ok && fmt.Sprint(dims) != fmt.Sprint(want[k].Dims) {
			t.Errorf("output %q: inferred %s, expected shape %v", vo.Name, v.Type(), want[k].Dims)
		}
	}
	if err := g.Err(); err != nil {
		t.Fatalf("building: %v", err)
	}
	mp, err := onnxfile.ToProtoWith(builder.NewModel(g), onnxfile.ProtoOptions{ValueInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	data, err := onnxfile.MarshalProto(mp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(modelDir, name+".onnx"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sess, err := onnxrun.OpenBytes(data, onnxrun.Options{IntraOpThreads: 1, InterOpThreads: 1, Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatalf("loading in ONNX Runtime: %v", err)
	}
	defer sess.Close()
	got, err := sess.Run(feeds)
	if err != nil {
		t.Fatalf("running: %v", err)
	}
	for k, vo := range declOut {
		res := compareTensors(got[vo.Name], toRuntime(t, want[k]))
		if !res.OK {
			t.Errorf("output %q: %v %v", vo.Name, res.Err, res)
		}
	}
}

// checkModels runs onnx.checker.check_model(full_check=True) over every
// model in dir with Debian's Python. It does what onnxcheck.Check does, but
// in one Python process for all the backend models (one process per model
// would take minutes).
func checkModels(t *testing.T, dir string) {
	t.Helper()
	onnxcheck.Require(t)
	py := onnxcheck.Python
	script := `
import glob, os, sys, onnx
bad = 0
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.onnx"))):
    try:
        onnx.checker.check_model(onnx.load(f), full_check=True)
    except Exception as e:
        bad += 1
        print(os.path.basename(f) + ": " + str(e).splitlines()[0] if str(e) else repr(e))
sys.exit(1 if bad else 0)
`
	out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
	if err != nil {
		t.Errorf("onnx.checker.check_model(full_check=True) refused models:\n%s", out)
	}
}
