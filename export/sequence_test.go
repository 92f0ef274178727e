package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// seqBytes builds a SequenceProto by hand: name, elem_type, tensor_values.
func seqBytes(t *testing.T, elemType uint64, tensors ...*onnxpb.TensorProto) []byte {
	t.Helper()
	b := protowire.AppendTag(nil, seqName, protowire.BytesType)
	b = protowire.AppendString(b, "s")
	b = protowire.AppendTag(b, seqElemType, protowire.VarintType)
	b = protowire.AppendVarint(b, elemType)
	for _, tp := range tensors {
		m, err := proto.Marshal(tp)
		if err != nil {
			t.Fatal(err)
		}
		b = protowire.AppendTag(b, seqTensorValues, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b
}

func TestReadSequenceProtoBytes(t *testing.T) {
	a := &onnxpb.TensorProto{DataType: proto.Int32(7), Dims: []int64{2}, Int64Data: []int64{1, -1}}
	c := &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{1, 1}, FloatData: []float32{1}}
	ts, err := ReadSequenceProtoBytes(seqBytes(t, seqElemTensor, a, c))
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

	empty, err := ReadSequenceProtoBytes(seqBytes(t, seqElemTensor))
	if err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("empty sequence = %v, %v; want an empty slice", empty, err)
	}

	tensorFile, _ := proto.Marshal(&onnxpb.TensorProto{Name: proto.String("x"), DataType: proto.Int32(1), Dims: []int64{1}, RawData: []byte{0, 0, 0, 0}})
	mapSeq := protowire.AppendTag(protowire.AppendVarint(protowire.AppendTag(nil, seqElemType, protowire.VarintType), 4), 6, protowire.BytesType)
	mapSeq = protowire.AppendBytes(mapSeq, nil)
	bad := []struct {
		name string
		data []byte
		want string
	}{
		{"tensor file", tensorFile, "not a SequenceProto"},
		{"map values", mapSeq, "sequence holds map values"},
		{"elem_type map", seqBytes(t, 4), "elem_type is map, want tensor"},
		{"truncated", seqBytes(t, seqElemTensor, a)[:12], "malformed"},
		{"bad element", seqBytes(t, seqElemTensor, &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{-1}}), "sequence element 0: tensor \"\": dimension 0 is negative"},
	}
	for _, tc := range bad {
		if _, err := ReadSequenceProtoBytes(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestReadSequenceProtoFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "output_0.pb")
	if err := os.WriteFile(p, seqBytes(t, seqElemTensor, &onnxpb.TensorProto{DataType: proto.Int32(9), Dims: []int64{1}, Int32Data: []int32{1}}), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := ReadSequenceProto(p)
	if err != nil || len(ts) != 1 || ts[0].DType != builder.Bool || string(ts[0].Raw) != "\x01" {
		t.Fatalf("ReadSequenceProto = %v, %v", ts, err)
	}
	if _, err := ReadSequenceProto(filepath.Join(t.TempDir(), "missing.pb")); err == nil || !strings.Contains(err.Error(), "missing.pb") {
		t.Errorf("missing file: err = %v", err)
	}
	// The backend test data, when installed.
	real := "/usr/share/libonnx-testdata/data/node/test_sequence_insert_at_back/test_data_set_0/output_0.pb"
	if _, err := os.Stat(real); err == nil {
		ts, err := ReadSequenceProto(real)
		if err != nil || len(ts) != 4 || ts[3].DType != builder.Int64 {
			t.Errorf("%s = %d tensors, %v; want 4 int64 tensors", real, len(ts), err)
		}
	}
}
