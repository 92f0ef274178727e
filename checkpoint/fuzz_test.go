package checkpoint

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"strconv"
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
	for _, n := range []string{"dtypes.pt", "transposed.pt", "shared.pt", "linear.pt", "nested_state_dict.pt", "list.pt", "s2s_module.pt", "s2s_nested.pt"} {
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

// FuzzPyTorchLegacy feeds arbitrary bytes to the legacy-format reader.
func FuzzPyTorchLegacy(f *testing.F) {
	seeds(f, "legacy.pt", "s2s_legacy.pt", "s2s_legacy_module.pt")
	f.Add(legacyFileOf(legacyPickle("w", "FloatStorage", 4, 0, []int{2}, []int{1}, &[3]int{0, 1, 2}), []string{"0"}, counted(4, f32s(1, 2, 3, 4))))
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := ReadPyTorchLegacy(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		checkConsistent(t, sd)
	})
}

// FuzzDiagnose checks the matcher on arbitrary keys and shapes (one key a
// line: "name d1 d2 ..."): it never panics, and when it says its maps fix
// the keys, renaming with them leaves keys that fit the layout exactly.
func FuzzDiagnose(f *testing.F) {
	lines := func(ks []KeyShape) string {
		var b strings.Builder
		for _, k := range ks {
			b.WriteString(k.Key)
			for _, d := range k.Shape {
				fmt.Fprintf(&b, " %d", d)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	f.Add(lines(s2sKeys))
	f.Add(lines(renamed(s2sKeys, Rename{"encoder.", "net.enc."}, Rename{"decoder.", "net.dec."})))
	f.Add(lines(renamed(s2sKeys, Rename{"decoder.fc_hidden", "decoder.attention.W1"}, Rename{"decoder.weight", "decoder.attention.V.weight"})))
	f.Add("conv1.weight 4 3 3 3\nfc.weight 3 4\nfc.bias 3\n")
	layouts := testLayouts()
	f.Fuzz(func(t *testing.T, in string) {
		var found []KeyShape
		seen := map[string]bool{}
		for _, line := range strings.Split(in, "\n") {
			fs := strings.Fields(line)
			if len(fs) == 0 || seen[fs[0]] || len(found) == 64 {
				continue
			}
			seen[fs[0]] = true
			k := KeyShape{Key: fs[0], Shape: []int64{}}
			for _, d := range fs[1:min(len(fs), 5)] {
				n, err := strconv.Atoi(d)
				if err != nil || n < 0 || n > 64 {
					n = 1
				}
				k.Shape = append(k.Shape, int64(n))
			}
			found = append(found, k)
		}
		d, err := Diagnose(found, layouts)
		if err != nil {
			t.Fatal(err)
		}
		_ = d.String()
		if !d.Fixes {
			return
		}
		sd := &StateDict{Tensors: fakeTensors(found)}
		for _, k := range found {
			sd.Keys = append(sd.Keys, k.Key)
		}
		if err := sd.Rename(d.Maps); err != nil {
			t.Fatalf("maps %v said to fix the keys fail: %v", d.Maps, err)
		}
		after, err := Diagnose(sd.KeyShapes(), layouts)
		if err != nil {
			t.Fatal(err)
		}
		if after.Fit != len(found) || len(after.Misnamed)+len(after.Missing)+len(after.Extra)+len(after.WrongShapes) != 0 {
			t.Fatalf("maps %v said to fix the keys leave:\n%s", d.Maps, after)
		}
	})
}
