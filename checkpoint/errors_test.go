package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runPython(script string, args ...string) (string, error) {
	out, err := exec.Command("/usr/bin/python3", append([]string{"-c", script}, args...)...).CombinedOutput()
	return string(out), err
}

// requireTorch skips a test when Debian's Python with torch is absent;
// under CI=true that is a failure instead.
func requireTorch(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PyTorch is required in CI: /usr/bin/python3 -c 'import torch': %v\n%s", err, out)
		}
		t.Skipf("no PyTorch (/usr/bin/python3 -c 'import torch': %v)", err)
	}
}

// pk assembles pickles opcode by opcode (protocol 2).
type pk struct{ bytes.Buffer }

func newPk() *pk { p := &pk{}; p.Write([]byte{0x80, 2}); return p }

func (p *pk) op(s string) *pk { p.WriteString(s); return p }

func (p *pk) str(s string) *pk {
	p.WriteByte('X')
	p.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(s))))
	p.WriteString(s)
	return p
}

func (p *pk) int(n int) *pk {
	if n != int(int32(n)) { // LONG1 of 8 bytes
		p.Write([]byte{0x8a, 8})
		p.Write(binary.LittleEndian.AppendUint64(nil, uint64(n)))
		return p
	}
	p.WriteByte('J')
	p.Write(binary.LittleEndian.AppendUint32(nil, uint32(int32(n))))
	return p
}

func (p *pk) global(module, name string) *pk { return p.op("c" + module + "\n" + name + "\n") }

func (p *pk) tuple(ns ...int) *pk {
	p.op("(")
	for _, n := range ns {
		p.int(n)
	}
	return p.op("t")
}

// tensorPickle is the pickle of {key: tensor} as torch.save writes it.
func tensorPickle(key, storageType string, numel, offset int, size, stride []int) []byte {
	p := newPk().op("}(").str(key).global("torch._utils", "_rebuild_tensor_v2").op("((").str("storage").
		global("torch", storageType).str("0").str("cpu").int(numel).op("tQ").int(offset).
		tuple(size...).tuple(stride...).op("\x89)tR").op("u.")
	return p.Bytes()
}

// torchZip wraps a pickle and storage 0 the way torch.save lays them out.
func torchZip(t testing.TB, pkl []byte, storage []byte) []byte {
	if storage == nil {
		return zipOf(t, "archive/data.pkl", string(pkl), "archive/version", "3\n")
	}
	return zipOf(t, "archive/data.pkl", string(pkl), "archive/data/0", string(storage), "archive/version", "3\n")
}

func safetensorsOf(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func fixture(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadFiles(t *testing.T) {
	linear := fixture(t, "linear.pt")
	hand := fixture(t, "hand.safetensors")
	random := make([]byte, 1000)
	rand.New(rand.NewSource(1)).Read(random)
	corrupt := bytes.Clone(linear)
	// Flip a bit of the weight storage: float32 1.0 is 00 00 80 3f.
	if i := bytes.Index(corrupt, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}); i < 0 {
		t.Fatal("weight data not found in linear.pt")
	} else {
		corrupt[i+3] ^= 1
	}
	linearPkl := string(tensorPickle("w", "FloatStorage", 1, 0, []int{1}, []int{1}))
	f4 := []byte{0, 0, 0x80, 0x3f}
	sp := func(h string, n int) []byte { return safetensorsOf(h, make([]byte, n)) }

	cases := []struct {
		name, file string
		data       []byte
		want       string // the error text after "<path>: "
	}{
		// Neither format.
		{"random bytes", "x.pt", random, "not a PyTorch zip checkpoint or safetensors file"},
		{"empty", "x.pt", nil, "not a PyTorch zip checkpoint or safetensors file"},
		{"tiny safetensors", "x.safetensors", []byte{1, 2, 3}, "not a PyTorch zip checkpoint or safetensors file"},
		{"an ONNX model", "encoder.onnx", []byte("\x08\x08\x12\x07pytorch"), "not a PyTorch zip checkpoint or safetensors file (nor torch.save's legacy format): by its name an ONNX model (what export writes), not a checkpoint; give the PyTorch checkpoint the model was saved in"},

		// Zip level.
		{"truncated half", "x.pt", linear[:len(linear)/2], "pytorch: corrupt or truncated zip archive: zip: not a valid zip file"},
		{"truncated tail", "x.pt", linear[:len(linear)-10], "pytorch: corrupt or truncated zip archive"},
		{"corrupt data", "x.pt", corrupt, "pytorch: corrupt zip entry linear/data/0: zip: checksum error"},
		{"no data.pkl", "x.pt", zipOf(t, "a/b", "x"), "pytorch: zip archive has no data.pkl: not a torch.save checkpoint"},
		{"two data.pkl", "x.pt", zipOf(t, "a/data.pkl", linearPkl, "b/data.pkl", linearPkl), "pytorch: zip archive has 2 data.pkl entries"},
		{"torchscript", "x.pt", zipOf(t, "m/data.pkl", linearPkl, "m/constants.pkl", ""), "pytorch: this is a TorchScript archive"},
		{"big endian", "x.pt", zipOf(t, "m/data.pkl", linearPkl, "m/byteorder", "big"), `pytorch: byte order "big" is not supported (want little)`},

		// Pickle level.
		{"hostile length", "x.pt", torchZip(t, []byte("\x80\x02X\xff\xff\xff\x7f"), nil), "pytorch: archive/data.pkl: pickle: opcode 0x58 at byte 2: argument of 2147483647 bytes runs past the end of the 7-byte pickle"},
		{"hostile frame", "x.pt", torchZip(t, []byte("\x80\x04\x95\x00\x00\x00\x00\x00\x01\x00\x00"), nil), "pytorch: archive/data.pkl: pickle: opcode 0x95 at byte 2: argument of 1099511627776 bytes runs past the end"},
		{"no stop", "x.pt", torchZip(t, []byte("\x80\x02}"), nil), "pytorch: archive/data.pkl: pickle: ends without a STOP opcode (truncated?)"},
		{"unknown opcode", "x.pt", torchZip(t, []byte("\x80\x02\xff."), nil), "pytorch: archive/data.pkl: pickle: unknown opcode 0xff at byte 2"},
		{"decoder panic", "x.pt", torchZip(t, []byte("\x80\x02}(X\x01\x00\x00\x00au."), nil), "pytorch: archive/data.pkl: malformed checkpoint: the pickle decoder failed: runtime error: index out of range"},
		{"list", "x.pt", fixture(t, "list.pt"), "pytorch: the pickle holds a list, not a dict of tensors"},
		{"no tensors nested", "x.pt", torchZip(t, newPk().op("}(").str("state_dict").op("}(").str("a").op("K\x01uu.").Bytes(), nil), `pytorch: no tensors in the pickle: the dict's entries hold none ("state_dict" is a dict)`},
		{"int key", "x.pt", torchZip(t, newPk().op("}(K\x01K\x02u.").Bytes(), nil), "pytorch: not a dict of tensors: a key is an int, not a string"},

		// Storages and views.
		{"storage missing", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 1, 0, []int{1}, []int{1}), nil), `pytorch: tensor "w": storage "0": zip entry archive/data/0 is missing`},
		{"storage short", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 3, 0, []int{3}, []int{1}), make([]byte, 8)), `pytorch: tensor "w": storage "0": torch.FloatStorage of 3 elements needs 12 bytes but zip entry archive/data/0 holds 8`},
		{"view past end", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 2, 0, []int{3}, []int{1}), make([]byte, 8)), `pytorch: tensor "w": view (offset 0, size [3], stride [1]) reaches past the end of storage "0" of 2 elements`},
		{"offset past end", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 2, 2, []int{1}, []int{1}), make([]byte, 8)), `pytorch: tensor "w": view (offset 2, size [1], stride [1]) reaches past the end`},
		{"negative stride", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 2, 1, []int{2}, []int{-1}), make([]byte, 8)), `pytorch: tensor "w": stride [-1] has a negative entry`},
		{"negative size", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 2, 0, []int{-2}, []int{1}), make([]byte, 8)), `pytorch: tensor "w": size [-2] has a negative dimension`},
		{"negative offset", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 2, -1, []int{1}, []int{1}), make([]byte, 8)), `_rebuild_tensor_v2: storage offset is an int, want a non-negative int`},
		{"huge expand", "x.pt", torchZip(t, tensorPickle("w", "FloatStorage", 1, 0, []int{1 << 30, 1 << 10}, []int{0, 0}), f4), `pytorch: tensor "w": 4398046511104 bytes of tensor data exceed what a`},
		{"unsupported storage", "x.pt", torchZip(t, tensorPickle("w", "ComplexFloatStorage", 1, 0, []int{1}, []int{1}), make([]byte, 8)), `pytorch: tensor "w": unsupported storage type torch.ComplexFloatStorage`},
		{"sparse", "x.pt", torchZip(t, newPk().op("}(").str("s").global("torch._utils", "_rebuild_sparse_tensor").op(")Ru.").Bytes(), nil), `pytorch: tensor "s": sparse tensor is not supported`},

		// Safetensors.
		{"st header too long", "x.safetensors", safetensorsOf("{}", nil)[:8], "safetensors: header length 2 is larger than the file (8 bytes; truncated file?)"},
		{"st truncated header", "x.safetensors", hand[:20], "safetensors: header length 384 is larger than the file (20 bytes; truncated file?)"},
		{"st header not json", "x.safetensors", sp("{abc", 0), "safetensors: header is not JSON: invalid character 'a'"},
		{"st header not object", "x.safetensors", sp("[1,2]", 0), "safetensors: header is not a JSON object"},
		{"st trailing", "x.safetensors", sp("{} x", 0), "safetensors: header is not JSON: data after the closing brace"},
		{"st out of bounds", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), `safetensors: tensor "a": data_offsets [0, 8] out of bounds (data area is 4 bytes; truncated file?)`},
		{"st truncated data", "x.safetensors", hand[:len(hand)-4], `safetensors: tensor "d": data_offsets [48, 56] out of bounds (data area is 52 bytes; truncated file?)`},
		{"st reversed offsets", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, 4), `safetensors: tensor "a": data_offsets [4, 0] out of bounds`},
		{"st overlap", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), `safetensors: tensors "a" [0, 8] and "b" [4, 12] overlap`},
		{"st size mismatch", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), `safetensors: tensor "a": float32 shape [3] needs 12 bytes but data_offsets [0, 8] hold 8`},
		{"st unsupported dtype", "x.safetensors", sp(`{"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}`, 1), `safetensors: tensor "a": unsupported dtype "F8_E4M3"`},
		{"st duplicate key", "x.safetensors", sp(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1), `safetensors: header has key "a" twice`},
		{"st missing field", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[1]}}`, 4), `safetensors: tensor "a": header entry needs dtype, shape and data_offsets`},
		{"st unknown field", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, 4), `safetensors: tensor "a": bad header entry: json: unknown field "x"`},
		{"st negative dim", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), `safetensors: tensor "a": shape [-1]: dimension 0 is negative`},
		{"st huge shape", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}`, 4), `safetensors: tensor "a": shape [4611686018427387904 4] of float32 is too large`},
		{"st three offsets", "x.safetensors", sp(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8), `safetensors: tensor "a": data_offsets has 3 numbers, want 2`},
		{"st metadata", "x.safetensors", sp(`{"__metadata__":{"a":1}}`, 0), "safetensors: __metadata__ must map strings to strings"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.file)
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			sd, err := Load(p)
			if err == nil {
				t.Fatalf("loaded %d tensors, want an error containing %q", len(sd.Keys), c.want)
			}
			if !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error\n  %v\nwant %q after %q", err, c.want, p+": ")
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.pt")
	for _, load := range []func(string) (*StateDict, error){Load, LoadPyTorch, LoadSafetensors} {
		if _, err := load(p); err == nil || !strings.Contains(err.Error(), p) || !os.IsNotExist(err) {
			t.Errorf("error %v, want a not-exist error naming %s", err, p)
		}
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: error %v", err)
	}
}

// A safetensors file whose data has bytes no tensor claims still loads, with
// a note.
func TestSafetensorsGapNote(t *testing.T) {
	b := safetensorsOf(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{9, 7, 9})
	sd, err := ReadSafetensors(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if got := sd.Tensors["a"].Raw; !bytes.Equal(got, []byte{7}) {
		t.Errorf("a = %v, want [7]", got)
	}
	if len(sd.Notes) != 1 || sd.Notes[0] != "2 of the 3 data bytes belong to no tensor" {
		t.Errorf("notes %q", sd.Notes)
	}
}
