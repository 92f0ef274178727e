package onnxfile

import (
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// ioModel declares one input or output of every kind, an initializer that
// is also a graph input, and a big initializer that ReadGraphIO must skip.
func ioModel() *onnxpb.ModelProto {
	tensor := func(elem onnxpb.TensorProto_DataType, dims ...any) *onnxpb.TypeProto {
		tt := &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(elem))}
		if dims != nil {
			tt.Shape = &onnxpb.TensorShapeProto{}
			for _, d := range dims {
				dim := &onnxpb.TensorShapeProto_Dimension{}
				switch d := d.(type) {
				case int:
					dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}
				case string:
					if d != "" {
						dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}
					}
				}
				tt.Shape.Dim = append(tt.Shape.Dim, dim)
			}
		}
		return &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}}
	}
	vi := func(name string, t *onnxpb.TypeProto) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: t}
	}
	seq := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{ElemType: tensor(onnxpb.TensorProto_FLOAT, "n")}}}
	opt := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_OptionalType{OptionalType: &onnxpb.TypeProto_Optional{ElemType: seq}}}
	mp := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_MapType{MapType: &onnxpb.TypeProto_Map{KeyType: proto.Int32(int32(onnxpb.TensorProto_INT64)), ValueType: tensor(onnxpb.TensorProto_FLOAT)}}}
	sparse := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SparseTensorType{SparseTensorType: &onnxpb.TypeProto_SparseTensor{ElemType: proto.Int32(int32(onnxpb.TensorProto_DOUBLE)), Shape: &onnxpb.TensorShapeProto{}}}}
	return &onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: &onnxpb.GraphProto{
		Name: proto.String("g"),
		Node: []*onnxpb.NodeProto{{OpType: proto.String("Identity"), Input: []string{"ids"}, Output: []string{"y"}}},
		Input: []*onnxpb.ValueInfoProto{
			vi("ids", tensor(onnxpb.TensorProto_INT64, "batch", "", 7)),
			vi("w", tensor(onnxpb.TensorProto_FLOAT, 1000)),
			vi("xs", seq), vi("scalar", tensor(onnxpb.TensorProto_BOOL, []any{}...)), vi("free", tensor(onnxpb.TensorProto_FLOAT)),
		},
		Initializer: []*onnxpb.TensorProto{{Name: proto.String("w"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: []int64{1000}, RawData: make([]byte, 4000)}},
		Output:      []*onnxpb.ValueInfoProto{vi("y", tensor(onnxpb.TensorProto_INT64, "batch", -3, 7)), vi("o", opt), vi("m", mp), vi("sp", sparse), vi("untyped", nil)},
	}}
}

func TestGraphIO(t *testing.T) {
	inner := &ValueType{Kind: KindTensor, Elem: builder.Float, Shape: builder.Dims("n")}
	seq := ValueType{Kind: KindSequence, Inner: inner}
	wantIn := []ValueInfo{
		{"ids", ValueType{Kind: KindTensor, Elem: builder.Int64, Shape: builder.Shape{builder.Sym("batch"), builder.UnknownDim(), builder.D(7)}}},
		{"xs", seq},
		{"scalar", ValueType{Kind: KindTensor, Elem: builder.Bool, Shape: builder.Shape{}}},
		{"free", ValueType{Kind: KindTensor, Elem: builder.Float}},
	}
	wantOut := []ValueInfo{
		{"y", ValueType{Kind: KindTensor, Elem: builder.Int64, Shape: builder.Shape{builder.Sym("batch"), builder.UnknownDim(), builder.D(7)}}},
		{"o", ValueType{Kind: KindOptional, Inner: &seq}},
		{"m", ValueType{Kind: KindMap, Elem: builder.Int64, Inner: &ValueType{Kind: KindTensor, Elem: builder.Float}}},
		{"sp", ValueType{Kind: KindSparseTensor, Elem: builder.Double, Shape: builder.Shape{}}},
		{"untyped", ValueType{Kind: KindUndeclared}},
	}
	mp := ioModel()
	data, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() ([]ValueInfo, []ValueInfo, error){
		"GraphIO":     func() ([]ValueInfo, []ValueInfo, error) { in, out := GraphIO(mp); return in, out, nil },
		"ReadGraphIO": func() ([]ValueInfo, []ValueInfo, error) { return ReadGraphIO(data) },
	} {
		in, out, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(in, wantIn) {
			t.Errorf("%s inputs:\n got %+v\nwant %+v", name, in, wantIn)
		}
		if !reflect.DeepEqual(out, wantOut) {
			t.Errorf("%s outputs:\n got %+v\nwant %+v", name, out, wantOut)
		}
	}
	if e, ok := wantIn[1].Type.TensorElem(); !ok || e != builder.Float {
		t.Errorf("TensorElem of a sequence of float32 = %v, %v", e, ok)
	}
	if _, ok := wantOut[1].Type.TensorElem(); ok {
		t.Error("TensorElem of an optional: ok")
	}
	s := Summarize(mp)
	var got []string
	for _, v := range append(s.Inputs, s.Outputs...) {
		got = append(got, v.Name+" "+v.Type+v.Shape)
	}
	want := []string{"ids int64[batch,?,7]", "xs sequence(float32[n])", "scalar bool[]", "free float32[*]",
		"y int64[batch,?,7]", "o optional(sequence(float32[n]))", "m map(int64,float32[*])", "sp sparse(float64)[]", "untyped unknown[*]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Summarize I/O = %q, want %q", got, want)
	}
}

// TestReadGraphIOErrors: bytes that end inside a field are an error, at
// every level ReadGraphIO reads.
func TestReadGraphIOErrors(t *testing.T) {
	data, err := proto.Marshal(ioModel())
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for n := 1; n < len(data); n += 7 {
		if _, _, err := ReadGraphIO(data[:n]); err != nil {
			failed++
			if !strings.Contains(err.Error(), "reading the graph's inputs and outputs") {
				t.Fatalf("%d bytes: error %q does not say what it was reading", n, err)
			}
		}
	}
	if failed == 0 {
		t.Error("no truncated model gave an error")
	}
	if _, _, err := ReadGraphIO([]byte{0x3a, 0x10, 0x01}); err == nil {
		t.Error("a graph field longer than the data: no error")
	}
}

func TestGraphNodes(t *testing.T) {
	mp, err := ToProto(testModel())
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := GraphNodes(mp)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range nodes {
		ops = append(ops, n.Op)
	}
	if want := []string{"Add", "Clip", "Dropout", "If", "Constant", "Custom"}; !reflect.DeepEqual(ops, want) {
		t.Fatalf("ops = %v, want %v", ops, want)
	}
	clip, drop, ifn, cst, custom := nodes[1], nodes[2], nodes[3], nodes[4], nodes[5]
	if want := []string{nodes[0].Outputs[0], "", "w", ""}; !reflect.DeepEqual(clip.Inputs, want) {
		t.Errorf("Clip inputs = %q, want %q", clip.Inputs, want)
	}
	if a := drop.Attrs["ratio"]; a.Kind != builder.AttrFloat || a.Float != 0.25 {
		t.Errorf("Dropout ratio = %+v", a)
	}
	then, elseB := ifn.Attrs["then_branch"], ifn.Attrs["else_branch"]
	if then.Kind != builder.AttrGraph || len(then.Body) != 1 || then.Body[0].Op != "Relu" || len(elseB.Body) != 1 || elseB.Body[0].Op != "Neg" {
		t.Errorf("If branches = %+v / %+v", then, elseB)
	}
	if v := cst.Attrs["value"].Tensor; v == nil || v.DType != builder.Float || len(v.Dims) != 0 {
		t.Errorf("Constant value = %+v", v)
	} else if f, _ := v.Float32s(); len(f) != 1 || f[0] != 0.5 {
		t.Errorf("Constant value = %v, want 0.5", f)
	}
	a := custom.Attrs
	if a["i"].Int != -3 || a["s"].Str != "hi" || !reflect.DeepEqual(a["is"].Ints, []int64{1, 2}) ||
		!reflect.DeepEqual(a["fs"].Floats, []float32{0.5}) || !reflect.DeepEqual(a["ss"].Strings, []string{"p", "q"}) {
		t.Errorf("Custom attributes = %+v", a)
	}
	// A tensor attribute that cannot be decoded names the node.
	mp.Graph.Node[4].Attribute[0].T.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	if _, err := GraphNodes(mp); err == nil || !strings.Contains(err.Error(), `node 4 (Constant) attribute "value"`) {
		t.Errorf("external tensor attribute: err = %v", err)
	}
}
