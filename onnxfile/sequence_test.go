package onnxfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"github.com/attnx/attnx/internal/testenv"
	"google.golang.org/protobuf/proto"
)

// seqBytes serializes a SequenceProto of the given tensors.
func seqBytes(t *testing.T, elemType onnxpb.SequenceProto_DataType, tensors ...*onnxpb.TensorProto) []byte {
	t.Helper()
	b, err := proto.Marshal(&onnxpb.SequenceProto{Name: proto.String("s"), ElemType: proto.Int32(int32(elemType)), TensorValues: tensors})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadSequenceProtoBytes(t *testing.T) {
	a := &onnxpb.TensorProto{DataType: proto.Int32(7), Dims: []int64{2}, Int64Data: []int64{1, -1}}
	c := &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{1, 1}, FloatData: []float32{1}}
	ts, err := ReadSequenceProtoBytes(seqBytes(t, onnxpb.SequenceProto_TENSOR, a, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("got %d tensors, want 2", len(ts))
	}
	want := []struct {
		dt   builder.DataType
		dims []int64
		raw  []byte
	}{
		{builder.Int64, []int64{2}, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{builder.Float, []int64{1, 1}, []byte{0, 0, 0x80, 0x3f}},
	}
	for i, w := range want {
		if ts[i].DType != w.dt || len(ts[i].Dims) != len(w.dims) || string(ts[i].Raw) != string(w.raw) {
			t.Errorf("tensor %d = %v %v %v, want %v %v %v", i, ts[i].DType, ts[i].Dims, ts[i].Raw, w.dt, w.dims, w.raw)
		}
		for j := range w.dims {
			if ts[i].Dims[j] != w.dims[j] {
				t.Errorf("tensor %d dims = %v, want %v", i, ts[i].Dims, w.dims)
			}
		}
	}

	empty, err := ReadSequenceProtoBytes(seqBytes(t, onnxpb.SequenceProto_TENSOR))
	if err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("empty sequence = %v, %v; want an empty slice", empty, err)
	}

	tensorFile, _ := proto.Marshal(&onnxpb.TensorProto{Name: proto.String("x"), DataType: proto.Int32(1), Dims: []int64{1}, RawData: []byte{0, 0, 0, 0}})
	mapSeq, _ := proto.Marshal(&onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_MAP)), MapValues: []*onnxpb.MapProto{{}}})
	bad := []struct {
		name string
		data []byte
		want string
	}{
		{"tensor file", tensorFile, "not a SequenceProto: it has fields that SequenceProto does not define"},
		{"map values", mapSeq, "sequence holds map values"},
		{"elem_type map", seqBytes(t, onnxpb.SequenceProto_MAP), "elem_type is map, want tensor"},
		{"elem_type unknown", seqBytes(t, 9), "elem_type is unknown (9), want tensor"},
		{"sparse values", func() []byte {
			b, _ := proto.Marshal(&onnxpb.SequenceProto{SparseTensorValues: []*onnxpb.SparseTensorProto{{}}})
			return b
		}(), "sequence holds sparse tensor values"},
		{"truncated", seqBytes(t, onnxpb.SequenceProto_TENSOR, a)[:12], "malformed"},
		{"bad element", seqBytes(t, onnxpb.SequenceProto_TENSOR, &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{-1}}), "sequence element 0: tensor \"\": dimension 0 is negative"},
	}
	for _, tc := range bad {
		if _, err := ReadSequenceProtoBytes(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestReadSequenceProtoFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "output_0.pb")
	if err := os.WriteFile(p, seqBytes(t, onnxpb.SequenceProto_TENSOR, &onnxpb.TensorProto{DataType: proto.Int32(9), Dims: []int64{1}, Int32Data: []int32{1}}), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := ReadSequenceProto(p)
	if err != nil || len(ts) != 1 || ts[0].DType != builder.Bool || string(ts[0].Raw) != "\x01" {
		t.Fatalf("ReadSequenceProto = %v, %v", ts, err)
	}
	if _, err := ReadSequenceProto(filepath.Join(t.TempDir(), "missing.pb")); err == nil || !strings.Contains(err.Error(), "missing.pb") {
		t.Errorf("missing file: err = %v", err)
	}
	// A sequence of the backend test data.
	real := filepath.Join(testenv.Backend(t, "node"), "test_sequence_insert_at_back", "test_data_set_0", "output_0.pb")
	ts, err = ReadSequenceProto(real)
	if err != nil || len(ts) != 4 || ts[3].DType != builder.Int64 {
		t.Errorf("%s = %d tensors, %v; want 4 int64 tensors", real, len(ts), err)
	}
}
