package onnxfile_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/onnxpb"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"google.golang.org/protobuf/proto"
)

// backendSeeds returns up to n small model.onnx files (under maxBytes) of
// the ONNX backend test data, spread over the sorted list so that they
// cover many operators, plus a few with subgraphs (Loop, If, Scan).
func backendSeeds(n int, maxBytes int64) [][]byte {
	var paths []string
	for _, d := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		m, _ := filepath.Glob(filepath.Join(testenv.BackendData, d, "*", "model.onnx"))
		paths = append(paths, m...)
	}
	sort.Strings(paths)
	var out [][]byte
	step := max(1, len(paths)/(2*n))
	for i := 0; i < len(paths) && len(out) < n; i += step {
		st, err := os.Stat(paths[i])
		if err != nil || st.Size() > maxBytes {
			continue
		}
		if b, err := os.ReadFile(paths[i]); err == nil {
			out = append(out, b)
		}
	}
	for _, name := range []string{"node/test_loop11/model.onnx", "node/test_if/model.onnx", "node/test_scan9_sum/model.onnx"} {
		if b, err := os.ReadFile(filepath.Join(testenv.BackendData, name)); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// attnxSeeds returns the graphs attnx itself writes (encoder, decoder step,
// greedy Loop) for a fixture checkpoint, and the decoder once more with its
// weights in an external data file "model.onnx.data": that pair makes the
// fuzzer reach the external-data code from the start.
func attnxSeeds(tb testing.TB) (inline [][]byte, extModel, extData []byte) {
	sd, err := checkpoint.Load("../testdata/fixtures/luong-general_b1_l1/checkpoint.pt")
	if err != nil {
		tb.Fatalf("fixture: %v", err)
	}
	w, _, err := attention.FromStateDict(sd.Tensors, attention.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	var models []*builder.Model
	for _, build := range []func() (*builder.Model, error){
		func() (*builder.Model, error) { return attention.Encoder(w, attention.BuildOptions{}) },
		func() (*builder.Model, error) { return attention.Decoder(w, attention.BuildOptions{}) },
		func() (*builder.Model, error) {
			return attention.Greedy(w, attention.DefaultSpecial, attention.BuildOptions{})
		},
	} {
		m, err := build()
		if err != nil {
			tb.Fatal(err)
		}
		models = append(models, m)
		mp, err := onnxfile.ToProto(m)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := onnxfile.MarshalProto(mp)
		if err != nil {
			tb.Fatal(err)
		}
		inline = append(inline, b)
	}
	dir := tb.TempDir()
	p := filepath.Join(dir, "model.onnx")
	if err := onnxfile.WriteFile(p, models[1], onnxfile.WriteOptions{ExternalDataThreshold: 64}); err != nil {
		tb.Fatal(err)
	}
	if extModel, err = os.ReadFile(p); err != nil {
		tb.Fatal(err)
	}
	// WriteFile tags the data file's name with its content's hash; the
	// fuzzed directory holds it as "model.onnx.data".
	mp, err := onnxfile.LoadBytes(extModel)
	if err != nil {
		tb.Fatal(err)
	}
	if extData, err = os.ReadFile(filepath.Join(dir, externalLocations(mp.Graph)[0])); err != nil {
		tb.Fatal(err)
	}
	return inline, withLocation(tb, extModel, "model.onnx.data"), extData
}

// withLocation returns model (which must have external tensors) with every
// external location replaced by loc.
func withLocation(tb testing.TB, model []byte, loc string) []byte {
	mp, err := onnxfile.LoadBytes(model)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range mp.Graph.Initializer {
		for _, e := range t.ExternalData {
			if e.GetKey() == "location" {
				e.Value = proto.String(loc)
			}
		}
	}
	b, err := onnxfile.MarshalProto(mp)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// externalLocations lists the location of every external tensor of mp:
// initializers, tensor attributes and subgraphs, as export resolves them.
func externalLocations(g *onnxpb.GraphProto) []string {
	if g == nil {
		return nil
	}
	var locs []string
	add := func(t *onnxpb.TensorProto) {
		if t == nil || t.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
			return
		}
		loc := ""
		for _, e := range t.ExternalData {
			if e.GetKey() == "location" {
				loc = e.GetValue()
			}
		}
		locs = append(locs, loc)
	}
	for _, t := range g.Initializer {
		add(t)
	}
	for _, st := range g.SparseInitializer {
		add(st.Values)
		add(st.Indices)
	}
	for _, n := range g.Node {
		for _, a := range n.Attribute {
			add(a.T)
			for _, t := range a.Tensors {
				add(t)
			}
			locs = append(locs, externalLocations(a.G)...)
			for _, sg := range a.Graphs {
				locs = append(locs, externalLocations(sg)...)
			}
		}
	}
	return locs
}

// escapes reports whether an external data location may point outside the
// model's directory lexically: absolute, or with a ".." component (either
// separator), which ONNX Runtime refuses and so must export.
func escapes(loc string) bool {
	if filepath.IsAbs(loc) || strings.HasPrefix(loc, `\`) || (len(loc) >= 2 && loc[1] == ':') {
		return true
	}
	for _, part := range strings.FieldsFunc(loc, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return true
		}
	}
	return false
}

// secret is what lies outside the fuzzed model's directory; a load that
// returns it in a tensor has read outside the directory.
var secret = bytes.Repeat([]byte("SECRET!!"), 64)

// FuzzLoadONNX feeds arbitrary bytes to onnxfile.LoadBytes and, through a
// model directory holding the fuzzed model and a fuzzed data file, to
// LoadWith with external data: neither may panic; a model LoadBytes accepts
// re-marshals; LoadWith succeeds only when every external location stays
// inside the model's directory (no absolute paths, no "..", no symlink out,
// as ONNX Runtime requires), and afterwards no tensor refers to external
// data and none holds bytes from outside the directory.
func FuzzLoadONNX(f *testing.F) {
	for _, b := range backendSeeds(24, 4096) {
		f.Add(b, []byte(nil))
	}
	inline, extModel, extData := attnxSeeds(f)
	for _, b := range inline {
		f.Add(b, []byte(nil))
	}
	f.Add(extModel, extData)
	for _, loc := range []string{"../secret.bin", "/etc/passwd", "link.bin", `..\secret.bin`, "sub/../../secret.bin", ".", "data"} {
		f.Add(withLocation(f, extModel, loc), extData)
	}
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, model, data []byte) {
		mp, err := onnxfile.LoadBytes(model)
		if err != nil {
			if mp != nil {
				t.Fatal("LoadBytes returned a model with an error")
			}
			return
		}
		if mp.Graph == nil || mp.IrVersion == nil {
			t.Fatal("LoadBytes accepted a model without graph or ir_version")
		}
		if _, err := proto.Marshal(mp); err != nil {
			t.Fatalf("a loaded model does not marshal again: %v", err)
		}
		locs := externalLocations(mp.Graph)
		if len(locs) == 0 {
			return
		}
		// root/secret.bin         outside the model's directory
		// root/m/model.onnx       the fuzzed model
		// root/m/model.onnx.data  the fuzzed data file (also as "data")
		// root/m/link.bin         symlink to ../secret.bin
		root := t.TempDir()
		dir := filepath.Join(root, "m")
		must(t, os.Mkdir(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(root, "secret.bin"), secret, 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "model.onnx"), model, 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "model.onnx.data"), data, 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "data"), data, 0o644))
		must(t, os.Symlink("../secret.bin", filepath.Join(dir, "link.bin")))
		got, err := onnxfile.LoadWith(filepath.Join(dir, "model.onnx"), onnxfile.LoadOptions{LoadExternalData: true})
		if err != nil {
			if got != nil {
				t.Fatal("LoadWith returned a model with an error")
			}
			if !strings.Contains(err.Error(), "model.onnx") {
				t.Fatalf("error does not name the model file: %v", err)
			}
			return
		}
		for _, loc := range locs {
			if escapes(loc) {
				t.Fatalf("external data location %q escapes the model's directory but was loaded", loc)
			}
			real, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(loc)))
			if err != nil || !strings.HasPrefix(real, dir+string(filepath.Separator)) {
				// dir itself may be behind a symlink (e.g. /tmp); compare resolved.
				rdir, _ := filepath.EvalSymlinks(dir)
				if err != nil || !strings.HasPrefix(real, rdir+string(filepath.Separator)) {
					t.Fatalf("external data location %q resolves to %q, outside %s, but was loaded", loc, real, dir)
				}
			}
		}
		if left := externalLocations(got.Graph); len(left) != 0 {
			t.Fatalf("after loading external data, %d tensors still refer to it", len(left))
		}
		if len(secret) >= 16 && bytes.Contains(flatRaw(got.Graph), secret[:16]) && !bytes.Contains(append(model, data...), secret[:16]) {
			t.Fatal("a tensor holds bytes from outside the model's directory")
		}
	})
}

// flatRaw concatenates the raw data of g's initializers.
func flatRaw(g *onnxpb.GraphProto) []byte {
	var b []byte
	for _, t := range g.Initializer {
		b = append(b, t.RawData...)
	}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLoadWithRefusesEscapingLocations is the regular-test form of what
// FuzzLoadONNX checks: every way for an external data location to leave
// the model's directory is refused with a message naming the location,
// even when the file it names exists and has the right size; the same
// model with a safe location loads.
func TestLoadWithRefusesEscapingLocations(t *testing.T) {
	_, extModel, extData := attnxSeeds(t)
	root := t.TempDir()
	dir := filepath.Join(root, "m")
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	// The data file exists inside and outside the directory, so only the
	// location check can refuse.
	must(t, os.WriteFile(filepath.Join(root, "w.data"), extData, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "w.data"), extData, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "w.data"), extData, 0o644))
	must(t, os.Symlink(filepath.Join(root, "w.data"), filepath.Join(dir, "abslink.data")))
	must(t, os.Symlink("../w.data", filepath.Join(dir, "rellink.data")))
	must(t, os.Symlink("..", filepath.Join(dir, "up")))
	cases := []struct{ loc, want string }{
		{"w.data", ""},
		{"sub/w.data", ""},
		{"./w.data", ""},
		{"../w.data", `".." component`},
		{"sub/../../w.data", `".." component`},
		{`..\w.data`, `".." component`},
		{`sub\..\..\w.data`, `".." component`},
		{filepath.Join(root, "w.data"), "absolute path"},
		{`\w.data`, "absolute path"},
		{"abslink.data", "outside the model's directory"},
		{"rellink.data", "outside the model's directory"},
		{"up/w.data", "outside the model's directory"},
		{"", "no location"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, "model.onnx")
		must(t, os.WriteFile(p, withLocation(t, extModel, c.loc), 0o644))
		mp, err := onnxfile.LoadWith(p, onnxfile.LoadOptions{LoadExternalData: true})
		if c.want == "" {
			if err != nil {
				t.Errorf("location %q: %v", c.loc, err)
			} else if n := len(externalLocations(mp.Graph)); n != 0 {
				t.Errorf("location %q: %d tensors still external", c.loc, n)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "model.onnx") {
			t.Errorf("location %q: error %v, want one naming model.onnx and saying %q", c.loc, err, c.want)
		}
	}
}

// overflowModel is a model whose one initializer claims length
// math.MaxInt64 at offset 1 of "w.bin", with dims that make the expected
// byte count match (dtype uint8) or no dtype at all (undefined, size 0).
func overflowModel(tb testing.TB, dtype onnxpb.TensorProto_DataType) []byte {
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: &onnxpb.GraphProto{Initializer: []*onnxpb.TensorProto{{
		Name: proto.String("w"), DataType: proto.Int32(int32(dtype)), Dims: []int64{math.MaxInt64},
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String("w.bin")},
			{Key: proto.String("offset"), Value: proto.String("1")},
			{Key: proto.String("length"), Value: proto.String(strconv.FormatInt(math.MaxInt64, 10))},
		}}}}}
	b, err := proto.Marshal(mp)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestLoadWithExternalLengthOverflow: offset 1 + length MaxInt64 overflowed
// int64, passed the "runs past the end" check and panicked in make([]byte,
// length). It must be an error naming the tensor and the file.
func TestLoadWithExternalLengthOverflow(t *testing.T) {
	for _, dt := range []onnxpb.TensorProto_DataType{onnxpb.TensorProto_UNDEFINED, onnxpb.TensorProto_UINT8, onnxpb.TensorProto_FLOAT} {
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, "w.bin"), make([]byte, 16), 0o644))
		p := filepath.Join(dir, "m.onnx")
		must(t, os.WriteFile(p, overflowModel(t, dt), 0o644))
		_, err := onnxfile.LoadWith(p, onnxfile.LoadOptions{LoadExternalData: true})
		want := fmt.Sprintf(`tensor "w": external data of %d bytes at offset 1 runs past the end of "w.bin" (16 bytes)`, int64(math.MaxInt64))
		if dt == onnxpb.TensorProto_FLOAT { // refused before its data is looked at
			want = `tensor "w": float32 [9223372036854775807] needs more than 9223372036854775807 bytes`
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "m.onnx") {
			t.Errorf("dtype %v: error %v, want %q", dt, err, want)
		}
	}
}

// TestLoadRefusesOverflowingShapes: an external tensor whose byte size
// overflows int64 (2^62 float32s = 2^64 bytes, wrapping to 0) matched an
// empty data file and loaded with no data; a tensor with such dims is
// refused by LoadBytes whatever its data.
func TestLoadRefusesOverflowingShapes(t *testing.T) {
	const want = `tensor "w": float32 [4611686018427387904] needs more than 9223372036854775807 bytes`
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: &onnxpb.GraphProto{Initializer: []*onnxpb.TensorProto{{
		Name: proto.String("w"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: []int64{1 << 62},
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String("w.bin")}},
	}}}}
	b, err := proto.Marshal(mp)
	must(t, err)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "w.bin"), nil, 0o644))
	p := filepath.Join(dir, "m.onnx")
	must(t, os.WriteFile(p, b, 0o644))
	for _, opt := range []onnxfile.LoadOptions{{}, {LoadExternalData: true}} {
		if _, err := onnxfile.LoadWith(p, opt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadWith(%+v): err = %v, want it to contain %q", opt, err, want)
		}
	}
	// The same in a typed field, and as a count that wraps past zero.
	mp.Graph.Initializer[0] = &onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)),
		Dims: []int64{1 << 32, 1 << 32}}
	b, err = proto.Marshal(mp)
	must(t, err)
	if _, err := onnxfile.LoadBytes(b); err == nil || !strings.Contains(err.Error(), `tensor "w": shape [4294967296 4294967296] has more than 9223372036854775807 elements`) {
		t.Errorf("LoadBytes: err = %v, want an element-count overflow", err)
	}
}
