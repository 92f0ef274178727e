package onnxfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/onnxpb"
)

// streamCases returns attnx's own graphs (every architecture, 1 and 2
// layers; the greedy graph has a Loop body) and a few ONNX backend models
// with subgraphs, as ModelProtos.
func streamCases(t *testing.T) map[string]*onnxpb.ModelProto {
	t.Helper()
	out := map[string]*onnxpb.ModelProto{}
	for _, fx := range []string{"bahdanau_b1_l1", "luong-general_b4_l2", "luong-concat_b1_l1", "luong-dot_b4_l2"} {
		sd, err := checkpoint.Load(filepath.Join("..", "testdata", "fixtures", fx, "checkpoint.pt"))
		if err != nil {
			t.Fatalf("fixture %s: %v", fx, err)
		}
		w, _, err := attention.FromStateDict(sd.Tensors, attention.Options{})
		if err != nil {
			t.Fatalf("fixture %s: %v", fx, err)
		}
		for name, build := range map[string]func() (*builder.Model, error){
			"encoder": func() (*builder.Model, error) { return attention.Encoder(w, attention.BuildOptions{}) },
			"decoder": func() (*builder.Model, error) { return attention.Decoder(w, attention.BuildOptions{}) },
			"greedy": func() (*builder.Model, error) {
				return attention.Greedy(w, attention.DefaultSpecial, attention.BuildOptions{})
			},
		} {
			m, err := build()
			if err != nil {
				t.Fatalf("%s %s: %v", fx, name, err)
			}
			mp, err := ToProtoWith(m, ProtoOptions{ValueInfo: name == "greedy"})
			if err != nil {
				t.Fatalf("%s %s: %v", fx, name, err)
			}
			out[fx+"/"+name] = mp
		}
	}
	for _, name := range []string{"node/test_loop11", "node/test_if", "node/test_scan9_sum"} {
		mp, err := Load(filepath.Join("/usr/share/libonnx-testdata/data", name, "model.onnx"))
		if err == nil {
			out[name] = mp
		}
	}
	return out
}

// TestStreamProtoEqualsMarshal locks in that the streaming writer produces
// exactly MarshalProto's bytes, with streaming thresholds from "everything
// streams" to "nothing does".
func TestStreamProtoEqualsMarshal(t *testing.T) {
	old := streamMin
	defer func() { streamMin = old }()
	cases := streamCases(t)
	if len(cases) < 12 {
		t.Fatalf("only %d models to compare", len(cases))
	}
	for name, mp := range cases {
		want, err := MarshalProto(mp)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, min := range []int{0, 1, 64, 4096, 1 << 30} {
			streamMin = min
			var buf bytes.Buffer
			if err := StreamProto(&buf, mp); err != nil {
				t.Fatalf("%s (streamMin %d): %v", name, min, err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("%s (streamMin %d): StreamProto wrote %d bytes differing from MarshalProto's %d", name, min, buf.Len(), len(want))
			}
		}
	}
}

// TestWriteFileEqualsMarshal checks the file WriteFile streams to disk
// against Marshal of the same model.
func TestWriteFileEqualsMarshal(t *testing.T) {
	sd, err := checkpoint.Load("../testdata/fixtures/bahdanau_b4_l2/checkpoint.pt")
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := attention.FromStateDict(sd.Tensors, attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := attention.Greedy(w, attention.DefaultSpecial, attention.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	old := streamMin
	defer func() { streamMin = old }()
	streamMin = 16 // make the fixture's small tensors take the streaming path
	path := filepath.Join(t.TempDir(), "greedy.onnx")
	if err := WriteFile(path, m, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("WriteFile wrote %d bytes differing from Marshal's %d", len(got), len(want))
	}
}

// TestStreamProtoUnknownFields keeps unknown fields (from a newer ONNX) at
// the end, as protobuf-go's marshaller does.
func TestStreamProtoUnknownFields(t *testing.T) {
	mp := &onnxpb.ModelProto{IrVersion: new(int64), Graph: &onnxpb.GraphProto{}}
	mp.ProtoReflect().SetUnknown([]byte{0xf8, 0x07, 0x01}) // field 127, varint 1
	want, err := MarshalProto(mp)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := StreamProto(&buf, mp); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got % x, want % x", buf.Bytes(), want)
	}
	if err := StreamProto(&buf, nil); err == nil {
		t.Fatal("StreamProto(nil) succeeded")
	}
}
