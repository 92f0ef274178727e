package onnxfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"github.com/attnx/attnx/internal/testenv"
	"google.golang.org/protobuf/proto"
)

func TestTensorFromProtoTypedFields(t *testing.T) {
	i32 := func(dt builder.DataType, v ...int32) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{Name: proto.String("t"), DataType: proto.Int32(int32(dt)), Dims: []int64{int64(len(v))}, Int32Data: v}
	}
	cases := []struct {
		name string
		tp   *onnxpb.TensorProto
		raw  []byte
	}{
		{"float_data", &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{2}, FloatData: []float32{1, -2}},
			[]byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}},
		{"complex64 in float_data", &onnxpb.TensorProto{DataType: proto.Int32(14), Dims: []int64{1}, FloatData: []float32{1, -2}},
			[]byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}},
		{"double_data", &onnxpb.TensorProto{DataType: proto.Int32(11), Dims: []int64{1}, DoubleData: []float64{1}},
			[]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{"int64_data", &onnxpb.TensorProto{DataType: proto.Int32(7), Dims: []int64{2}, Int64Data: []int64{-1, 2}},
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0, 0, 0}},
		{"uint64_data", &onnxpb.TensorProto{DataType: proto.Int32(13), Dims: []int64{1}, Uint64Data: []uint64{1 << 63}},
			[]byte{0, 0, 0, 0, 0, 0, 0, 0x80}},
		{"uint32 in uint64_data", &onnxpb.TensorProto{DataType: proto.Int32(12), Dims: []int64{1}, Uint64Data: []uint64{0xdeadbeef}},
			[]byte{0xef, 0xbe, 0xad, 0xde}},
		{"int32_data", i32(builder.Int32, -2), []byte{0xfe, 0xff, 0xff, 0xff}},
		{"int8 in int32_data", i32(builder.Int8, -1, 5), []byte{0xff, 5}},
		{"uint8 in int32_data", i32(builder.Uint8, 255, 0), []byte{0xff, 0}},
		{"int16 in int32_data", i32(builder.Int16, -2), []byte{0xfe, 0xff}},
		{"uint16 in int32_data", i32(builder.Uint16, 65535), []byte{0xff, 0xff}},
		{"bool in int32_data", i32(builder.Bool, 1, 0, 1), []byte{1, 0, 1}},
		{"float16 bits in int32_data", i32(builder.Float16, 0x3c00), []byte{0x00, 0x3c}},
		{"bfloat16 bits in int32_data", i32(builder.BFloat16, 0x3f80), []byte{0x80, 0x3f}},
		{"raw_data", &onnxpb.TensorProto{DataType: proto.Int32(6), Dims: []int64{1}, RawData: []byte{1, 2, 3, 4}},
			[]byte{1, 2, 3, 4}},
		{"scalar", &onnxpb.TensorProto{DataType: proto.Int32(1), FloatData: []float32{1}}, []byte{0, 0, 0x80, 0x3f}},
		{"empty", &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{0, 3}}, []byte{}},
	}
	for _, c := range cases {
		b, err := proto.Marshal(c.tp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadTensorProtoBytes(b)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !bytes.Equal(got.Raw, c.raw) || got.DType != builder.DataType(c.tp.GetDataType()) {
			t.Errorf("%s: got %v % x, want % x", c.name, got.DType, got.Raw, c.raw)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	s := &onnxpb.TensorProto{Name: proto.String("s"), DataType: proto.Int32(8), Dims: []int64{2}, StringData: [][]byte{[]byte("x"), []byte("")}}
	b, _ := proto.Marshal(s)
	got, err := ReadTensorProtoBytes(b)
	if err != nil || got.Name != "s" || len(got.Strings) != 2 || string(got.Strings[0]) != "x" {
		t.Errorf("string tensor: %v %v", got, err)
	}
}

func TestTensorFromProtoErrors(t *testing.T) {
	cases := []struct {
		name, want string
		tp         *onnxpb.TensorProto
	}{
		{"too few floats", "float_data has 1 values, want 2", &onnxpb.TensorProto{Name: proto.String("t"), DataType: proto.Int32(1), Dims: []int64{2}, FloatData: []float32{1}}},
		{"raw size", "raw_data has 3 bytes, want 4", &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{1}, RawData: []byte{1, 2, 3}}},
		{"strings", "1 strings for shape [2]", &onnxpb.TensorProto{DataType: proto.Int32(8), Dims: []int64{2}, StringData: [][]byte{nil}}},
		{"negative dim", "negative", &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{-1}}},
		{"bad type", "unsupported element type", &onnxpb.TensorProto{DataType: proto.Int32(99), Dims: []int64{1}}},
	}
	for _, c := range cases {
		if _, err := TensorFromProto(c.tp); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ReadTensorProtoBytes([]byte{0xff, 0xff}); err == nil || !strings.Contains(err.Error(), "not a TensorProto") {
		t.Errorf("garbage: %v", err)
	}
	p := filepath.Join(t.TempDir(), "x.pb")
	os.WriteFile(p, []byte{0x0a}, 0o644)
	if _, err := ReadTensorProto(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("error should name %s: %v", p, err)
	}
}

func TestTensorRoundTrip(t *testing.T) {
	for _, in := range []*builder.Tensor{
		builder.FloatTensor([]int64{2, 2}, []float32{1, 2, 3, 4}),
		builder.Int64Tensor(nil, []int64{-5}),
		builder.BoolTensor([]int64{3}, []bool{true, false, true}),
		{Name: "s", DType: builder.String, Dims: []int64{1}, Strings: [][]byte{[]byte("hé")}},
	} {
		b, err := MarshalTensor(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := ReadTensorProtoBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		if out.DType != in.DType || !bytes.Equal(out.Raw, in.Raw) || len(out.Dims) != len(in.Dims) || len(out.Strings) != len(in.Strings) || out.Name != in.Name {
			t.Errorf("round trip of %v changed it to %v", in.Type(), out.Type())
		}
	}
}

func TestReadBackendTestTensors(t *testing.T) {
	dir := filepath.Join(testenv.Backend(t, "node"), "test_abs", "test_data_set_0")
	in, err := ReadTensorProto(filepath.Join(dir, "input_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := ReadTensorProto(filepath.Join(dir, "output_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "x" || in.DType != builder.Float || in.Type().Shape.String() != "[3,4,5]" {
		t.Fatalf("input_0.pb = %s %v", in.Name, in.Type())
	}
	x, _ := in.Float32s()
	y, _ := out.Float32s()
	for i := range x {
		if a := x[i]; (a < 0 && y[i] != -a) || (a >= 0 && y[i] != a) {
			t.Fatalf("element %d: abs(%v) = %v in output_0.pb", i, x[i], y[i])
		}
	}
	// Every .pb tensor of the backend tests decodes (sequences and
	// optionals are other messages and may fail, but never panic).
	files, _ := filepath.Glob(filepath.Join(testenv.BackendData, "*", "*", "test_data_set_*", "*.pb"))
	ok := 0
	for _, f := range files {
		if _, err := ReadTensorProto(f); err == nil {
			ok++
		}
	}
	t.Logf("%d of %d backend .pb files decode as tensors", ok, len(files))
	if ok < len(files)*9/10 {
		t.Errorf("only %d of %d backend .pb files decode", ok, len(files))
	}
}

func TestSummarize(t *testing.T) {
	mp, err := ToProto(testModel())
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(mp)
	if s.IRVersion != 8 || len(s.Opsets) != 1 || s.Opsets[0].Version != 17 || s.ProducerName != "attnx" || s.Metadata["alpha"] != "first" {
		t.Errorf("header = %+v", s)
	}
	if len(s.Inputs) != 3 || s.Inputs[0].Shape != "[batch,3]" || s.Inputs[1].Shape != "[?,3]" || s.Inputs[2].Type != "bool" || s.Inputs[2].Shape != "[]" {
		t.Errorf("inputs = %+v", s.Inputs)
	}
	if len(s.Outputs) != 2 || s.Outputs[1].Shape != "[*]" {
		t.Errorf("outputs = %+v", s.Outputs)
	}
	// 6 nodes in the main graph, one in each If branch.
	if s.Nodes != 8 {
		t.Errorf("nodes = %d, want 8", s.Nodes)
	}
	counts := map[string]int{}
	for _, o := range s.Ops {
		counts[o.Op] = o.Count
	}
	if counts["Relu"] != 1 || counts["Neg"] != 1 || counts["If"] != 1 {
		t.Errorf("ops = %v", s.Ops)
	}
	// w: 3 floats, init_0: 2 int64s, words: 2 strings of 3 bytes in all.
	if s.Initializers != 3 || s.Parameters != 7 || s.ParameterBytes != 12+16+3 {
		t.Errorf("initializers %d parameters %d bytes %d", s.Initializers, s.Parameters, s.ParameterBytes)
	}
	loop, err := Load(filepath.Join(testenv.Backend(t, "node"), "test_range_float_type_positive_delta_expanded", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	ls := Summarize(loop)
	lc := map[string]int{}
	for _, o := range ls.Ops {
		lc[o.Op] = o.Count
	}
	if lc["Loop"] != 1 || lc["Add"] == 0 || ls.Nodes <= len(loop.Graph.Node) {
		t.Errorf("Loop body ops not counted: %+v", ls.Ops)
	}
}
