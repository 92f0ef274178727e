package checkpoint

import (
	"archive/zip"
	"bytes"
	"io"
	"strings"
	"testing"
)

// seeds adds every fixture, plus a few hand-made archives, to the corpus.
func seeds(f *testing.F, names ...string) {
	for _, n := range names {
		f.Add(fixture(f, n))
	}
}

// FuzzLoadPyTorch feeds arbitrary bytes to the torch.save reader: it must
// return a state dict or an error, never panic, hang or exhaust memory, and
// what it returns must be self-consistent.
func FuzzLoadPyTorch(f *testing.F) {
	seeds(f, "dtypes.pt", "transposed.pt", "shared.pt", "linear.pt", "nested_state_dict.pt",
		"nested_model.pt", "list.pt", "notensor.pt", "legacy.pt")
	f.Add(torchZip(f, tensorPickle("w", "FloatStorage", 2, 0, []int{2, 2}, []int{0, 1}), make([]byte, 8)))
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		checkConsistent(t, sd)
	})
}

// FuzzReadSafetensors does the same for the safetensors reader, and checks
// that whatever it reads survives a write and a second read unchanged.
func FuzzReadSafetensors(f *testing.F) {
	seeds(f, "hand.safetensors")
	sd, err := Load("testdata/dtypes.pt")
	if err != nil {
		f.Fatal(err)
	}
	b, err := MarshalSafetensors(sd.Tensors, map[string]string{"k": "v"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(safetensorsOf(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := ReadSafetensors(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		checkConsistent(t, sd)
		out, err := MarshalSafetensors(sd.Tensors, sd.Metadata)
		if err != nil {
			t.Fatalf("read but cannot write back: %v", err)
		}
		back, err := ReadSafetensors(bytes.NewReader(out), int64(len(out)))
		if err != nil {
			t.Fatalf("cannot read back what was written: %v", err)
		}
		checkConsistent(t, back)
		if len(back.Keys) != len(sd.Keys) {
			t.Fatalf("%d tensors after the round trip, want %d", len(back.Keys), len(sd.Keys))
		}
		for _, k := range sd.Keys {
			a, b := sd.Tensors[k], back.Tensors[k]
			if b == nil || a.DType != b.DType || !bytes.Equal(a.Raw, b.Raw) || len(a.Dims) != len(b.Dims) {
				t.Fatalf("tensor %q changed in the round trip", k)
			}
		}
	})
}

func checkConsistent(t *testing.T, sd *StateDict) {
	t.Helper()
	if len(sd.Keys) != len(sd.Tensors) {
		t.Fatalf("%d keys but %d tensors", len(sd.Keys), len(sd.Tensors))
	}
	for _, k := range sd.Keys {
		tn := sd.Tensors[k]
		if tn == nil || tn.Name != k {
			t.Fatalf("tensor %q missing or misnamed", k)
		}
		if err := tn.Validate(); err != nil {
			t.Fatalf("inconsistent tensor: %v", err)
		}
		if tn.DType.IsFloat() {
			if _, _, err := sd.Float32(k); err != nil {
				t.Fatalf("Float32(%q): %v", k, err)
			}
		}
	}
}

// FuzzPyTorchPickle fuzzes data.pkl and one storage inside a well-formed
// archive: mutating a whole zip mostly breaks its checksums, so this reaches
// the pickle scanner, the unpickler, state-dict selection and strided
// materialisation far more often than FuzzLoadPyTorch does.
func FuzzPyTorchPickle(f *testing.F) {
	for _, n := range []string{"dtypes.pt", "transposed.pt", "shared.pt", "linear.pt", "nested_state_dict.pt", "list.pt"} {
		zr, err := zip.NewReader(bytes.NewReader(fixture(f, n)), int64(len(fixture(f, n))))
		if err != nil {
			f.Fatal(err)
		}
		var pkl, st []byte
		for _, e := range zr.File {
			rc, _ := e.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			switch {
			case strings.HasSuffix(e.Name, "/data.pkl"):
				pkl = b
			case strings.HasSuffix(e.Name, "/data/0"):
				st = b
			}
		}
		f.Add(pkl, st)
	}
	f.Add(tensorPickle("w", "FloatStorage", 2, 0, []int{2, 2}, []int{0, 1}), make([]byte, 8))
	f.Fuzz(func(t *testing.T, pkl, storage []byte) {
		data := torchZip(t, pkl, storage)
		sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		checkConsistent(t, sd)
	})
}
