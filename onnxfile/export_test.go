package onnxfile

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"github.com/attnx/attnx/internal/testenv"
	"google.golang.org/protobuf/proto"
)

// op adds a node whose output types are given, for building test models
// without package ops.
func op(g *builder.Graph, name string, ins []*builder.Value, attrs []builder.Attr, outs ...builder.Type) []*builder.Value {
	return builder.Apply(builder.Call{Graph: g, Op: name, Inputs: ins, Attrs: attrs, Infer: func() ([]*builder.Type, error) {
		r := make([]*builder.Type, len(outs))
		for i := range outs {
			if outs[i].Elem != builder.Undefined {
				r[i] = &outs[i]
			}
		}
		return r, nil
	}}, len(outs))
}

// testModel builds a small model that uses every feature ToProto handles.
func testModel() *builder.Model {
	g := builder.New("main")
	g.Doc = "main graph"
	x := g.Input("x", builder.Float, builder.Dims("batch", 3))
	u := g.Input("u", builder.Float, builder.Shape{builder.UnknownDim(), builder.D(3)})
	cond := g.Input("cond", builder.Bool, builder.Scalar())
	w := g.Init("w", builder.FloatTensor([]int64{3}, []float32{1, 2, 3}))
	g.Init("", builder.Int64Tensor([]int64{2}, []int64{7, -8}))
	words := &builder.Tensor{DType: builder.String, Dims: []int64{2}, Strings: [][]byte{[]byte("a"), []byte("bc")}}
	g.Init("words", words)
	ft := builder.TensorType(builder.Float, builder.Dims("batch", 3))
	sum := op(g, "Add", []*builder.Value{x, w}, nil, ft)[0]
	// Clip with its min omitted but max given, and a trailing omitted input.
	clip := op(g, "Clip", []*builder.Value{sum, nil, w, nil}, nil, ft)[0]
	// Dropout with its optional mask output omitted.
	drop := op(g, "Dropout", []*builder.Value{clip}, []builder.Attr{builder.FloatAttr("ratio", 0.25)}, ft, builder.Type{})[0]
	thenG := g.Sub("then")
	thenG.Output("then_out", op(thenG, "Relu", []*builder.Value{drop}, nil, ft)[0])
	elseG := g.Sub("else")
	elseG.Output("else_out", op(elseG, "Neg", []*builder.Value{u}, nil, ft)[0])
	ifOut := op(g, "If", []*builder.Value{cond}, []builder.Attr{
		builder.GraphAttr("then_branch", thenG), builder.GraphAttr("else_branch", elseG)}, ft)[0]
	c := op(g, "Constant", nil, []builder.Attr{builder.TensorAttr("value", builder.ScalarFloat(0.5))},
		builder.TensorType(builder.Float, builder.Scalar()))[0]
	misc := op(g, "Custom", []*builder.Value{c}, []builder.Attr{
		builder.IntAttr("i", -3), builder.StringAttr("s", "hi"), builder.IntsAttr("is", []int64{1, 2}),
		builder.FloatsAttr("fs", []float32{0.5}), builder.StringsAttr("ss", []string{"p", "q"})},
		builder.TensorType(builder.Float, nil))[0]
	g.Output("y", ifOut)
	g.Output("misc", misc)
	m := builder.NewModel(g)
	m.ProducerVersion = "0.1"
	m.Domain = "org.attnx"
	m.Version = 3
	m.Doc = "a test model"
	m.Metadata["zeta"] = "last"
	m.Metadata["alpha"] = "first"
	return m
}

func TestToProtoFields(t *testing.T) {
	mp, err := ToProto(testModel())
	if err != nil {
		t.Fatal(err)
	}
	if got := mp.GetIrVersion(); got != 8 {
		t.Errorf("ir_version = %d, want 8", got)
	}
	if len(mp.OpsetImport) != 1 || mp.OpsetImport[0].GetDomain() != "" || mp.OpsetImport[0].GetVersion() != 17 {
		t.Errorf("opset_import = %v, want one entry {\"\", 17}", mp.OpsetImport)
	}
	if mp.GetProducerName() != "attnx" || mp.GetProducerVersion() != "0.1" || mp.GetDomain() != "org.attnx" ||
		mp.GetModelVersion() != 3 || mp.GetDocString() != "a test model" {
		t.Errorf("model fields: producer %q %q domain %q version %d doc %q", mp.GetProducerName(), mp.GetProducerVersion(),
			mp.GetDomain(), mp.GetModelVersion(), mp.GetDocString())
	}
	if len(mp.MetadataProps) != 2 || mp.MetadataProps[0].GetKey() != "alpha" || mp.MetadataProps[1].GetValue() != "last" {
		t.Errorf("metadata_props not sorted by key: %v", mp.MetadataProps)
	}
	g := mp.Graph
	if g.GetName() != "main" || g.GetDocString() != "main graph" {
		t.Errorf("graph name %q doc %q", g.GetName(), g.GetDocString())
	}
	if len(g.Input) != 3 {
		t.Fatalf("%d inputs, want 3", len(g.Input))
	}
	if _, shape := valueTypeFromProto(g.Input[0].Type).describe(); shape != "[batch,3]" {
		t.Errorf("x shape %s, want [batch,3]", shape)
	}
	if d := g.Input[1].Type.GetTensorType().Shape.Dim[0]; d.Value != nil {
		t.Errorf("unknown dimension must be an empty Dimension, got %v", d)
	}
	if sh := g.Input[2].Type.GetTensorType().Shape; sh == nil || len(sh.Dim) != 0 {
		t.Errorf("scalar must have an empty shape, got %v", sh)
	}
	if len(g.Initializer) != 3 {
		t.Fatalf("%d initializers, want 3", len(g.Initializer))
	}
	w := g.Initializer[0]
	if w.GetName() != "w" || w.GetDataType() != int32(onnxpb.TensorProto_FLOAT) || len(w.RawData) != 12 ||
		math.Float32frombits(uint32(w.RawData[4])|uint32(w.RawData[5])<<8|uint32(w.RawData[6])<<16|uint32(w.RawData[7])<<24) != 2 {
		t.Errorf("initializer w = %v", w)
	}
	if g.Initializer[1].GetName() != "init_0" {
		t.Errorf("unnamed initializer called %q, want init_0", g.Initializer[1].GetName())
	}
	if s := g.Initializer[2]; len(s.StringData) != 2 || string(s.StringData[1]) != "bc" || s.RawData != nil {
		t.Errorf("string initializer = %v", s)
	}
	nodes := map[string]*onnxpb.NodeProto{}
	for _, n := range g.Node {
		nodes[n.GetOpType()] = n
	}
	if in := nodes["Clip"].Input; len(in) != 4 || in[1] != "" || in[2] != "w" || in[3] != "" {
		t.Errorf("Clip inputs = %q, want omitted ones as \"\"", in)
	}
	if out := nodes["Dropout"].Output; len(out) != 1 {
		t.Errorf("Dropout outputs = %q, want the omitted trailing mask dropped", out)
	}
	if a := nodes["Dropout"].Attribute[0]; a.GetType() != onnxpb.AttributeProto_FLOAT || a.GetF() != 0.25 {
		t.Errorf("ratio attribute = %v", a)
	}
	ifn := nodes["If"]
	if len(ifn.Attribute) != 2 || ifn.Attribute[1].GetName() != "then_branch" || ifn.Attribute[1].GetType() != onnxpb.AttributeProto_GRAPH {
		t.Fatalf("If attributes = %v", ifn.Attribute)
	}
	then := ifn.Attribute[1].G
	if then.GetName() != "then" || len(then.Node) != 1 || then.Node[0].GetOpType() != "Relu" || then.Output[0].GetName() != "then_out" {
		t.Errorf("then_branch = %v", then)
	}
	if a := nodes["Constant"].Attribute[0]; a.GetType() != onnxpb.AttributeProto_TENSOR || len(a.T.Dims) != 0 || len(a.T.RawData) != 4 {
		t.Errorf("Constant value = %v", a)
	}
	want := map[string]string{"fs": "FLOATS", "i": "INT", "is": "INTS", "s": "STRING", "ss": "STRINGS"}
	for _, a := range nodes["Custom"].Attribute {
		if want[a.GetName()] != a.GetType().String() {
			t.Errorf("attribute %s has type %v, want %s", a.GetName(), a.GetType(), want[a.GetName()])
		}
	}
	if o := g.Output[1]; o.GetName() != "misc" || o.Type.GetTensorType().Shape != nil {
		t.Errorf("unknown-rank output must have no shape: %v", o)
	}
	if len(g.ValueInfo) != 0 {
		t.Errorf("value_info written without being asked for")
	}
	mp2, err := ToProtoWith(testModel(), ProtoOptions{ValueInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mp2.Graph.ValueInfo); n != 4 { // Add, Clip, Dropout, Constant
		t.Errorf("%d value_info entries, want 4", n)
	}
}

func TestToProtoRefusesBrokenModel(t *testing.T) {
	g := builder.New("g")
	g.Input("x", builder.Float, builder.Dims(1))
	_, err := ToProto(builder.NewModel(g))
	if err == nil || !strings.Contains(err.Error(), "no outputs") {
		t.Errorf("err = %v, want a 'no outputs' error", err)
	}
}

func TestMarshalIsDeterministic(t *testing.T) {
	a, err := Marshal(testModel())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		b, err := Marshal(testModel())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("build %d serialized differently (%d vs %d bytes)", i+2, len(a), len(b))
		}
	}
	mp, err := LoadBytes(a)
	if err != nil {
		t.Fatal(err)
	}
	c, err := MarshalProto(mp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, c) {
		t.Error("load + re-marshal changed the bytes")
	}
}

// backendModels lists every model.onnx of the ONNX backend test data.
func backendModels(t *testing.T) []string {
	var paths []string
	for _, d := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		m, _ := filepath.Glob(filepath.Join(testenv.Backend(t, d), "*", "model.onnx"))
		paths = append(paths, m...)
	}
	return paths
}

func TestRoundTripBackendTestData(t *testing.T) {
	paths := backendModels(t)
	passed := 0
	for _, p := range paths {
		orig, err := Load(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		b, err := MarshalProto(orig)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		back, err := LoadBytes(b)
		if err != nil {
			t.Errorf("%s: reloading: %v", p, err)
			continue
		}
		if !proto.Equal(orig, back) {
			t.Errorf("%s: round trip changed the model", p)
			continue
		}
		passed++
	}
	t.Logf("%d of %d backend test models round-trip unchanged", passed, len(paths))
	if passed != len(paths) || len(paths) < 1000 {
		t.Errorf("%d of %d models round-trip (want all, and at least 1000)", passed, len(paths))
	}
}

func TestLoadRejectsBadFiles(t *testing.T) {
	good, err := Marshal(testModel())
	if err != nil {
		t.Fatal(err)
	}
	rnd := make([]byte, 4096)
	seed := uint32(12345)
	for i := range rnd {
		seed = seed*1664525 + 1013904223
		rnd[i] = byte(seed >> 24)
	}
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"empty.onnx", "the file is empty", nil},
		{"truncated.onnx", "the file is truncated: graph at byte", good[:len(good)/2]},
		{"random.onnx", "not an ONNX model", rnd},
		{"text.onnx", "not an ONNX model", []byte("hello, this is not a model\n")},
		{"tensor.onnx", "not an ONNX model: no graph", mustMarshalTensor(t)},
	}
	dir := t.TempDir()
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil {
			t.Errorf("%s: loaded without error", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		if !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(strings.TrimPrefix(err.Error(), p), c.want) {
			t.Errorf("%s: error %q should name the file and say %q", c.name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.onnx")); err == nil || !strings.Contains(err.Error(), "missing.onnx") {
		t.Errorf("missing file: %v", err)
	}
	// Every prefix of a valid model either loads or fails cleanly.
	for i := 0; i < len(good); i++ {
		LoadBytes(good[:i])
	}
}

func mustMarshalTensor(t *testing.T) []byte {
	b, err := MarshalTensor(builder.FloatTensor([]int64{2}, []float32{1, 2}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
