package reliability

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/attnx/attnx/checkpoint"
)

// TestExportDeterministicAcrossProcesses exports the same checkpoints twice,
// each time in a new process of the built binary (so map iteration order,
// addresses and timing differ), with vocabularies and greedy.onnx, and
// requires byte-identical model directories. It also exports the same
// weights from .pt and from .safetensors: only attnx.json's "source" may
// differ.
func TestExportDeterministicAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := attnxBinary(t)
	work := t.TempDir()
	vocab := func(n int) string {
		v := []string{"<pad>", "<sos>", "<eos>", "<unk>"}
		for c := 'a'; len(v) < n; c++ {
			v = append(v, string(c))
		}
		b, _ := json.Marshal(v)
		p := filepath.Join(work, "vocab"+string(rune('0'+n%10))+".json")
		os.WriteFile(p, b, 0o644)
		return p
	}
	src, tgt := vocab(19), vocab(23)
	for _, fx := range []string{"bahdanau_b4_l2", "luong-concat_b4_l2", "luong-dot_b1_l1"} {
		ck := filepath.Join("../testdata/fixtures", fx, "checkpoint.pt")
		var dirs []string
		for run := 0; run < 2; run++ {
			d := filepath.Join(work, fx+"-"+string(rune('a'+run)))
			out, err := exec.Command(bin, "export", ck, "-o", d, "--greedy", "--src-vocab", src, "--tgt-vocab", tgt).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: export: %v\n%s", fx, err, out)
			}
			dirs = append(dirs, d)
		}
		a, err := readDirFiles(dirs[0])
		if err != nil {
			t.Fatal(err)
		}
		b, err := readDirFiles(dirs[1])
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != 4 || len(a) != len(b) {
			t.Fatalf("%s: %d and %d files", fx, len(a), len(b))
		}
		for name, data := range a {
			if !bytes.Equal(data, b[name]) {
				t.Errorf("%s: %s differs between two runs of the binary", fx, name)
			}
		}
	}
	// The big generated checkpoint: two fresh processes, byte for byte.
	ckpt := writeCheckpoint(t, filepath.Join(work, "big.safetensors"), luongDotStateDict(128, 5000, 6000, 7))
	var dirs []map[string][]byte
	for run := 0; run < 2; run++ {
		d := filepath.Join(work, "big-"+string(rune('a'+run)))
		if out, err := exec.Command(bin, "export", ckpt, "-o", d).CombinedOutput(); err != nil {
			t.Fatalf("export: %v\n%s", err, out)
		}
		f, err := readDirFiles(d)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, f)
	}
	for name, data := range dirs[0] {
		if !bytes.Equal(data, dirs[1][name]) {
			t.Errorf("big: %s differs between two runs of the binary", name)
		}
	}
	// The same weights as .pt and as .safetensors give the same graphs.
	pt := "../testdata/fixtures/luong-general_b4_l2/checkpoint.pt"
	sd, err := checkpoint.Load(pt)
	if err != nil {
		t.Fatal(err)
	}
	st := writeCheckpoint(t, filepath.Join(work, "checkpoint.safetensors"), sd.Tensors)
	var fromPT, fromST map[string][]byte
	for _, c := range []struct {
		ck  string
		dst *map[string][]byte
	}{{pt, &fromPT}, {st, &fromST}} {
		d := filepath.Join(work, "fmt-"+filepath.Ext(c.ck)[1:])
		if out, err := exec.Command(bin, "export", c.ck, "-o", d, "--greedy").CombinedOutput(); err != nil {
			t.Fatalf("export %s: %v\n%s", c.ck, err, out)
		}
		if *c.dst, err = readDirFiles(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"encoder.onnx", "decoder.onnx", "greedy.onnx"} {
		if !bytes.Equal(fromPT[name], fromST[name]) {
			t.Errorf("%s differs between the .pt and the .safetensors of the same weights", name)
		}
	}
	var ia, ib map[string]any
	json.Unmarshal(fromPT["attnx.json"], &ia)
	json.Unmarshal(fromST["attnx.json"], &ib)
	delete(ia, "source")
	delete(ib, "source")
	ja, _ := json.Marshal(ia)
	jb, _ := json.Marshal(ib)
	if !bytes.Equal(ja, jb) {
		t.Errorf("attnx.json differs beyond \"source\":\n%s\n%s", ja, jb)
	}
}
