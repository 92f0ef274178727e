package checkpoint

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/testenv"
)

// ints decodes an integer or bool tensor's data to int64s.
func ints(t *testing.T, tn *builder.Tensor) []int64 {
	t.Helper()
	es := tn.DType.Size()
	out := make([]int64, len(tn.Raw)/es)
	for i := range out {
		b := tn.Raw[i*es:]
		switch tn.DType {
		case builder.Int64:
			out[i] = int64(binary.LittleEndian.Uint64(b))
		case builder.Int32:
			out[i] = int64(int32(binary.LittleEndian.Uint32(b)))
		case builder.Int16:
			out[i] = int64(int16(binary.LittleEndian.Uint16(b)))
		case builder.Int8:
			out[i] = int64(int8(b[0]))
		case builder.Uint8, builder.Bool:
			out[i] = int64(b[0])
		default:
			t.Fatalf("tensor %q: ints of %v", tn.Name, tn.DType)
		}
	}
	return out
}

type want struct {
	dtype  builder.DataType
	dims   []int64
	floats []float32 // for float types, compared after Float32
	ints   []int64   // for integer and bool types
}

func checkTensors(t *testing.T, sd *StateDict, keys []string, wants map[string]want) {
	t.Helper()
	if !reflect.DeepEqual(sd.Keys, keys) {
		t.Errorf("keys = %q, want %q", sd.Keys, keys)
	}
	for k, w := range wants {
		tn, err := sd.Tensor(k)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if tn.Name != k || tn.DType != w.dtype || !reflect.DeepEqual(tn.Dims, w.dims) {
			t.Errorf("%s: got name %q %v%v, want %v%v", k, tn.Name, tn.DType, tn.Dims, w.dtype, w.dims)
		}
		if err := tn.Validate(); err != nil {
			t.Errorf("%s: %v", k, err)
		}
		if w.dtype.IsFloat() {
			got, dims, err := sd.Float32(k)
			if err != nil {
				t.Errorf("%s: %v", k, err)
				continue
			}
			if !reflect.DeepEqual(dims, w.dims) {
				t.Errorf("%s: Float32 dims %v, want %v", k, dims, w.dims)
			}
			if len(got) != len(w.floats) {
				t.Errorf("%s: %d values %v, want %v", k, len(got), got, w.floats)
				continue
			}
			for i := range got {
				if got[i] != w.floats[i] {
					t.Errorf("%s[%d] = %v, want %v", k, i, got[i], w.floats[i])
				}
			}
		} else if got := ints(t, tn); !reflect.DeepEqual(got, w.ints) {
			t.Errorf("%s = %v, want %v", k, got, w.ints)
		}
	}
}

var dtypesWant = map[string]want{
	"f32":    {builder.Float, []int64{2, 3}, []float32{1.5, -2.25, 3, 4, 5, 0.125}, nil},
	"f16":    {builder.Float16, []int64{4}, []float32{1, -0.5, 65504, float32(math.Ldexp(1, -24))}, nil},
	"bf16":   {builder.BFloat16, []int64{3}, []float32{1, -2.5, 3.140625}, nil},
	"f64":    {builder.Double, []int64{2}, []float32{0.1, -2.5}, nil},
	"i64":    {builder.Int64, []int64{3}, nil, []int64{1, -2, 1 << 40}},
	"i32":    {builder.Int32, []int64{2}, nil, []int64{7, -8}},
	"i16":    {builder.Int16, []int64{2}, nil, []int64{300, -300}},
	"i8":     {builder.Int8, []int64{2}, nil, []int64{-128, 127}},
	"u8":     {builder.Uint8, []int64{2}, nil, []int64{0, 255}},
	"b":      {builder.Bool, []int64{3}, nil, []int64{1, 0, 1}},
	"scalar": {builder.Float, []int64{}, []float32{3.5}, nil},
	"empty":  {builder.Float, []int64{0, 3}, []float32{}, nil},
}

var dtypesKeys = []string{"f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "b", "scalar", "empty"}

var linearWant = map[string]want{
	"weight": {builder.Float, []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}, nil},
	"bias":   {builder.Float, []int64{2}, []float32{0.5, -0.5}, nil},
}

func TestLoadFixtures(t *testing.T) {
	cases := []struct {
		file   string
		format string
		keys   []string
		wants  map[string]want
		notes  []string // substrings, one per note
	}{
		{"dtypes.pt", FormatPyTorch, dtypesKeys, dtypesWant, nil},
		{"transposed.pt", FormatPyTorch, []string{"t"}, map[string]want{
			"t": {builder.Float, []int64{3, 2}, []float32{0, 3, 1, 4, 2, 5}, nil},
		}, []string{`tensor "t": made contiguous from stride [1 3]`}},
		{"shared.pt", FormatPyTorch, []string{"whole", "slice", "every2"}, map[string]want{
			"whole":  {builder.Float, []int64{2, 5}, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, nil},
			"slice":  {builder.Float, []int64{3}, []float32{2, 3, 4}, nil},
			"every2": {builder.Float, []int64{5}, []float32{0, 2, 4, 6, 8}, nil},
		}, []string{`tensor "every2": made contiguous from stride [2]`}},
		{"linear.pt", FormatPyTorch, []string{"weight", "bias"}, linearWant, nil},
		{"nested_state_dict.pt", FormatPyTorch, []string{"weight", "bias"}, linearWant,
			[]string{`tensors read from the top-level "state_dict" entry; other entries ignored: epoch, optimizer`}},
		{"nested_model.pt", FormatPyTorch, []string{"weight", "bias"}, linearWant,
			[]string{`tensors read from the top-level "model" entry; other entries ignored: step`}},
		{"hand.safetensors", FormatSafetensors, []string{"a", "h", "bf", "n", "d"}, map[string]want{
			"a":  {builder.Float, []int64{2, 2}, []float32{1, -2, 0.5, 8}, nil},
			"h":  {builder.Float16, []int64{2}, []float32{1.5, -3}, nil},
			"bf": {builder.BFloat16, []int64{2}, []float32{1, -2.5}, nil},
			"n":  {builder.Int64, []int64{3}, nil, []int64{1, -2, 3}},
			"d":  {builder.Double, []int64{}, []float32{2.75}, nil},
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			sd, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if sd.Format != c.format {
				t.Errorf("format %q, want %q", sd.Format, c.format)
			}
			checkTensors(t, sd, c.keys, c.wants)
			if len(sd.Notes) != len(c.notes) {
				t.Fatalf("notes %q, want %d matching %q", sd.Notes, len(c.notes), c.notes)
			}
			for i, n := range c.notes {
				if !strings.Contains(sd.Notes[i], n) {
					t.Errorf("note %q does not contain %q", sd.Notes[i], n)
				}
			}
			// The format-specific loader agrees with Load.
			load := LoadPyTorch
			if c.format == FormatSafetensors {
				load = LoadSafetensors
			}
			sd2, err := load(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sd, sd2) {
				t.Errorf("Load and the %s loader disagree", c.format)
			}
		})
	}
}

// Load picks the reader by content, not by extension.
func TestLoadSniffsContent(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ from, to, format string }{
		{"linear.pt", "linear.safetensors", FormatPyTorch},
		{"linear.pt", "noext", FormatPyTorch},
		{"hand.safetensors", "hand.pt", FormatSafetensors},
		{"hand.safetensors", "hand.bin", FormatSafetensors},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", c.from))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, c.to)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sd, err := Load(p)
		if err != nil {
			t.Fatalf("%s: %v", c.to, err)
		}
		if sd.Format != c.format {
			t.Errorf("%s: format %q, want %q", c.to, sd.Format, c.format)
		}
	}
}

func TestMarshalSafetensorsExact(t *testing.T) {
	ts := map[string]*builder.Tensor{
		"b": builder.Int64Tensor([]int64{1}, []int64{-1}),
		"a": builder.FloatTensor(nil, []float32{1}),
	}
	got, err := MarshalSafetensors(ts, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	hdr := `{"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"b":{"dtype":"I64","shape":[1],"data_offsets":[4,12]}}`
	hdr += strings.Repeat(" ", (8-len(hdr)%8)%8)
	want := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	want = append(want, hdr...)
	want = append(want, 0, 0, 0x80, 0x3f)
	want = append(want, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	if !bytes.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if (len(hdr)+8)%8 != 0 {
		t.Errorf("data does not start 8-aligned")
	}
}

func TestWriteSafetensorsRoundTrip(t *testing.T) {
	src, err := Load(filepath.Join("testdata", "dtypes.pt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "rt.safetensors")
	meta := map[string]string{"source": "dtypes.pt", "format": "pt"}
	if err := WriteSafetensors(p, src.Tensors, meta); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(p)
	// Overwrite: same bytes (deterministic), and no temp files left.
	if err := WriteSafetensors(p, src.Tensors, meta); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(p)
	if !bytes.Equal(first, second) {
		t.Error("two writes of the same tensors differ")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries after writing, want 1", len(ents))
	}
	back, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	sorted := []string{"b", "bf16", "empty", "f16", "f32", "f64", "i16", "i32", "i64", "i8", "scalar", "u8"}
	checkTensors(t, back, sorted, dtypesWant)
	if !reflect.DeepEqual(back.Metadata, meta) {
		t.Errorf("metadata %v, want %v", back.Metadata, meta)
	}
	for _, k := range sorted {
		if !bytes.Equal(back.Tensors[k].Raw, src.Tensors[k].Raw) {
			t.Errorf("%s: bytes differ after the round trip", k)
		}
	}
	if len(back.Notes) != 0 {
		t.Errorf("notes %q, want none", back.Notes)
	}
}

// Python reads what WriteSafetensors writes, by hand (json + struct), the
// way the reference does when the safetensors package is absent.
func TestPythonReadsOurSafetensors(t *testing.T) {
	testenv.PythonInterpreter(t)
	p := filepath.Join(t.TempDir(), "go.safetensors")
	ts := map[string]*builder.Tensor{
		"w": builder.FloatTensor([]int64{2, 2}, []float32{1, -2, 0.5, 8}),
		"n": builder.Int64Tensor([]int64{2}, []int64{7, -9}),
	}
	if err := WriteSafetensors(p, ts, map[string]string{"by": "go"}); err != nil {
		t.Fatal(err)
	}
	script := `
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8+n])
d = b[8+n:]
def get(k, fmt):
    e = h[k]; s, t = e["data_offsets"]
    return e["dtype"], e["shape"], list(struct.unpack("<" + fmt * ((t - s) // struct.calcsize(fmt)), d[s:t]))
print(h["__metadata__"], get("w", "f"), get("n", "q"))
`
	out, err := runPython(script, p)
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	want := "{'by': 'go'} ('F32', [2, 2], [1.0, -2.0, 0.5, 8.0]) ('I64', [2], [7, -9])\n"
	if out != want {
		t.Errorf("python printed %q, want %q", out, want)
	}
}

func TestMarshalSafetensorsErrors(t *testing.T) {
	f := builder.FloatTensor([]int64{2}, []float32{1, 2})
	cases := []struct {
		name string
		ts   map[string]*builder.Tensor
		want string
	}{
		{"nil", map[string]*builder.Tensor{"x": nil}, `tensor "x" is nil`},
		{"empty name", map[string]*builder.Tensor{"": f}, "empty tensor name"},
		{"metadata name", map[string]*builder.Tensor{"__metadata__": f}, "may not be called __metadata__"},
		{"name mismatch", map[string]*builder.Tensor{"x": {Name: "y", DType: builder.Float, Dims: []int64{1}, Raw: make([]byte, 4)}}, `stored under "x" is named "y"`},
		{"short data", map[string]*builder.Tensor{"x": {DType: builder.Float, Dims: []int64{3}, Raw: make([]byte, 8)}}, `tensor "x": 8 bytes of float32 data for shape [3] (want 12)`},
		{"dtype", map[string]*builder.Tensor{"x": {DType: builder.String, Dims: []int64{1}}}, `tensor "x": unsupported dtype string`},
		{"negative", map[string]*builder.Tensor{"x": {DType: builder.Float, Dims: []int64{-1}}}, "negative"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "out.safetensors")
			err := WriteSafetensors(p, c.ts, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, p, c.want)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("a failed write left %s behind", p)
			}
		})
	}
}

func TestFloat32Errors(t *testing.T) {
	sd, err := Load(filepath.Join("testdata", "dtypes.pt"))
	if err != nil {
		t.Fatal(err)
	}
	for key, w := range map[string]string{
		"i64":     `tensor "i64" is int64, not a floating-point type`,
		"missing": `no tensor "missing"`,
	} {
		if _, _, err := sd.Float32(key); err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Float32(%q) error %v, want %q", key, err, w)
		}
	}
	sd.Tensors["f32"].Raw = sd.Tensors["f32"].Raw[:20]
	if _, _, err := sd.Float32("f32"); err == nil || !strings.Contains(err.Error(), `tensor "f32": 20 bytes`) {
		t.Errorf("Float32 of a short tensor: %v", err)
	}
}

// zipOf builds a stored (uncompressed) zip archive from name/data pairs.
func zipOf(t testing.TB, entries ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i := 0; i+1 < len(entries); i += 2 {
		f, err := w.CreateHeader(&zip.FileHeader{Name: entries[i], Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(entries[i+1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
