package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/reference"
)

// TestVerifyFromEmptyDirectory runs a copy of the attnx binary that sits
// alone in an empty directory outside the repository, from another empty
// directory: verify must find its PyTorch reference inside the binary.
func TestVerifyFromEmptyDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	needTorch(t)
	build := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(build, "attnx"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(build, "attnx"))
	if err != nil {
		t.Fatal(err)
	}
	alone, cwd := t.TempDir(), t.TempDir()
	bin := filepath.Join(alone, "attnx")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ckpt, err := filepath.Abs(fixtureCkpt("luong-concat_b4_l2"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), reference.EnvReference+"=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("attnx %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("export", ckpt, "-o", "model", "--greedy")
	out := run("verify", "--model", "model", "--checkpoint", ckpt, "--batch", "3", "--steps", "5")
	t.Logf("attnx verify from %s, binary in %s:\n%s", cwd, alone, out)
	if !strings.HasSuffix(out, "\nOK: the ONNX graphs compute what PyTorch computes\n") {
		t.Errorf("verify did not succeed:\n%s", out)
	}
	if names, _ := os.ReadDir(alone); len(names) != 1 {
		t.Errorf("the binary's directory now holds %v: the reference should run from a temporary copy", names)
	}
}

// maliciousCheckpoint writes a torch.save-style zip whose pickle maps a key
// to a call of module.name(args...) (GLOBAL + REDUCE): unpickling it with
// Python's unrestricted pickle runs the call.
func maliciousCheckpoint(t *testing.T, path, module, name string, args ...string) {
	t.Helper()
	var p bytes.Buffer
	str := func(s string) {
		p.WriteByte('X') // BINUNICODE
		binary.Write(&p, binary.LittleEndian, uint32(len(s)))
		p.WriteString(s)
	}
	p.Write([]byte{0x80, 2, '}'}) // PROTO 2, EMPTY_DICT
	str("encoder.embedding.weight")
	p.WriteString("c" + module + "\n" + name + "\n") // GLOBAL
	p.WriteByte('(')                                 // MARK
	for _, a := range args {
		str(a)
	}
	p.WriteString("tRs.") // TUPLE, REDUCE, SETITEM, STOP
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{"archive/data.pkl", p.Bytes()}, {"archive/version", []byte("3\n")}} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyNeverUnpicklesTheCheckpoint gives verify (and export, and the
// reference itself) checkpoints whose pickle calls a function that would
// write a file: the file is never written. Verify hands the reference the
// weights its Go reader extracted, as safetensors; the reference loads .pt
// files only with torch.load(weights_only=True).
func TestVerifyNeverUnpicklesTheCheckpoint(t *testing.T) {
	dir := exportFixture(t, "luong-dot_b1_l1")
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "pwned")
	cases := map[string][]string{
		"builtins.open": {"builtins", "open", marker, "w"},
		"posix.system":  {"posix", "system", "touch " + marker},
	}
	// Control: Python's own unrestricted pickle does run these payloads, so
	// the marker staying absent below means something.
	if _, err := os.Stat(reference.DefaultPython); err == nil {
		for name, c := range cases {
			control := filepath.Join(tmp, "control.pt")
			args := append([]string(nil), c[2:]...)
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], marker, marker+"-control")
			}
			maliciousCheckpoint(t, control, c[0], c[1], args...)
			py := "import pickle, sys, zipfile; pickle.loads(zipfile.ZipFile(sys.argv[1]).read('archive/data.pkl'))"
			if out, err := exec.Command(reference.DefaultPython, "-c", py, control).CombinedOutput(); err != nil {
				t.Fatalf("control %s: %v\n%s", name, err, out)
			}
			if _, err := os.Stat(marker + "-control"); err != nil {
				t.Fatalf("control %s: plain pickle.loads did not create the marker: %v", name, err)
			}
			os.Remove(marker + "-control")
		}
	}
	t.Run("beside real weights", func(t *testing.T) {
		// A training checkpoint whose weights are fine but which also pickles
		// a call: the Go reader keeps the weights and stands the call in,
		// and verify runs to the end without the call ever running.
		needTorch(t)
		evil := filepath.Join(tmp, "training.pt")
		py := `import sys, torch
class Hook:
    def __reduce__(self):
        return (open, (sys.argv[3], "w"))
sd = torch.load(sys.argv[1], weights_only=True)
torch.save({"state_dict": sd, "epoch": 3, "hook": Hook()}, sys.argv[2])`
		if out, err := exec.Command(reference.DefaultPython, "-c", py, fixtureCkpt("luong-dot_b1_l1"), evil, marker).CombinedOutput(); err != nil {
			t.Fatalf("writing the checkpoint: %v\n%s", err, out)
		}
		code, out, errs := attnx("verify", "--model", dir, "--checkpoint", evil, "--steps", "3")
		t.Logf("attnx verify: exit %d\n%s%s", code, out, errs)
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("%s exists: reading the checkpoint ran the pickled call", marker)
		}
		if code != 0 && !strings.HasPrefix(errs, "attnx verify: reading checkpoint: ") {
			t.Errorf("exit %d, %q: want success, or the Go reader's refusal", code, errs)
		}
	})
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			evil := filepath.Join(tmp, strings.ReplaceAll(name, ".", "_")+".pt")
			maliciousCheckpoint(t, evil, c[0], c[1], c[2:]...)
			code, _, errs := attnx("verify", "--model", dir, "--checkpoint", evil)
			t.Logf("attnx verify: exit %d: %s", code, strings.TrimSpace(errs))
			if code != 1 || !strings.HasPrefix(errs, "attnx verify: ") {
				t.Errorf("verify: exit %d, %q; want exit 1 and an error", code, errs)
			}
			code, _, errs = attnx("export", evil, "-o", filepath.Join(tmp, "out"))
			t.Logf("attnx export: exit %d: %s", code, strings.TrimSpace(errs))
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("%s exists: reading the checkpoint ran %s", marker, name)
			}
			// Even given the pickle directly, the reference does not run it.
			if reference.Default.CheckTorch(context.Background()) != nil {
				if os.Getenv("CI") != "" {
					testenv.Torch(t)
				}
				return
			}
			in := filepath.Join(tmp, "in.safetensors")
			fixtures.Reference(t, "random-inputs", "--batch", "1", "--src-len", "3", "--src-vocab", "5", "--out", in)
			_, err := reference.Run(context.Background(), reference.Script, "run", "--checkpoint", evil, "--inputs", in,
				"--steps", "1", "--out", filepath.Join(tmp, "out.safetensors"))
			t.Logf("reference.py run: %v", err)
			if err == nil || !strings.Contains(err.Error(), "weights_only=True") {
				t.Errorf("reference.py run on the pickle: %v, want a weights_only refusal", err)
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("%s exists: the reference ran %s", marker, name)
			}
		})
	}
}
