package onnxfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// bigModel has two float initializers (400 and 12 bytes) and a MatMul.
func bigModel() *builder.Model { return bigModelWith(0.5) }

// bigModelWith is bigModel with w[i] = i*scale.
func bigModelWith(scale float32) *builder.Model {
	g := builder.New("big")
	x := g.Input("x", builder.Float, builder.Dims("batch", 10))
	data := make([]float32, 100)
	for i := range data {
		data[i] = float32(i) * scale
	}
	w := g.Init("w", builder.FloatTensor([]int64{10, 10}, data))
	b := g.Init("b", builder.FloatTensor([]int64{3}, []float32{1, 2, 3}))
	mm := op(g, "MatMul", []*builder.Value{x, w}, nil, builder.TensorType(builder.Float, builder.Dims("batch", 10)))[0]
	g.Output("y", mm)
	g.Output("b_out", b)
	return builder.NewModel(g)
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteFileInline(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.onnx")
	if err := WriteFile(p, testModel(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	want, _ := Marshal(testModel())
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("WriteFile wrote other bytes than Marshal")
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if got := dirNames(t, dir); got != "m.onnx" {
		t.Errorf("directory holds %s: a data file was written without external data?", got)
	}
}

// dirNames lists a directory's entries, comma-separated, in order.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// dataFileOf returns the external data file the model at p refers to
// (all its external tensors must name the same one), after checking that
// its name carries the tag of its content: name's stem, the first 16 hex
// digits of its SHA-256, name's extension.
func dataFileOf(t *testing.T, p, name string) string {
	t.Helper()
	mp, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	loc := ""
	_ = forEachTensor(mp.Graph, func(tp *onnxpb.TensorProto) error {
		if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			ref, err := parseExternal(tp)
			if err != nil {
				t.Fatal(err)
			}
			if loc != "" && ref.location != loc {
				t.Fatalf("tensors refer to %s and %s", loc, ref.location)
			}
			loc = ref.location
		}
		return nil
	})
	if loc == "" {
		t.Fatalf("%s has no external tensors", p)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(p), loc))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	ext := filepath.Ext(name)
	if want := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:])[:16] + ext; loc != want {
		t.Fatalf("data file %s, want %s (tagged with its content's hash)", loc, want)
	}
	return loc
}

func TestWriteFileExternalData(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.onnx")
	if err := WriteFile(p, bigModel(), WriteOptions{ExternalDataThreshold: 100}); err != nil {
		t.Fatal(err)
	}
	noTemps(t, dir)
	loc := dataFileOf(t, p, "m.onnx.data")
	if got := dirNames(t, dir); got != "m.onnx,"+loc {
		t.Errorf("directory holds %s, want m.onnx and %s", got, loc)
	}
	st, err := os.Stat(filepath.Join(dir, loc))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 400 {
		t.Errorf("data file has %d bytes, want 400 (only w moves)", st.Size())
	}
	raw, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	w, b := raw.Graph.Initializer[0], raw.Graph.Initializer[1]
	if w.GetDataLocation() != onnxpb.TensorProto_EXTERNAL || w.RawData != nil {
		t.Fatalf("w is not external: %v", w)
	}
	ext := map[string]string{}
	for _, e := range w.ExternalData {
		ext[e.GetKey()] = e.GetValue()
	}
	if ext["location"] != loc || ext["offset"] != "0" || ext["length"] != "400" {
		t.Errorf("external_data = %v", ext)
	}
	if b.GetDataLocation() == onnxpb.TensorProto_EXTERNAL || len(b.RawData) != 12 {
		t.Errorf("b (12 bytes, under the threshold) should stay inline: %v", b)
	}
	if _, err := TensorFromProto(w); err == nil || !strings.Contains(err.Error(), "external") {
		t.Errorf("decoding an unloaded external tensor: %v", err)
	}
	full, err := LoadWith(p, LoadOptions{LoadExternalData: true})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := TensorFromProto(full.Graph.Initializer[0])
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := wt.Float32s()
	if len(vals) != 100 || vals[0] != 0 || vals[7] != 3.5 || vals[99] != 49.5 {
		t.Errorf("w after loading external data = %v", vals)
	}
	inline, _ := ToProto(bigModel())
	if !proto.Equal(full, inline) {
		t.Error("model with external data loaded back differs from the inline model")
	}
}

func TestWriteFileAlignsExternalTensors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.onnx")
	if err := WriteFile(p, bigModel(), WriteOptions{ExternalDataThreshold: 1, ExternalDataFile: "weights.bin"}); err != nil {
		t.Fatal(err)
	}
	raw, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	loc := dataFileOf(t, p, "weights.bin")
	for i, tp := range raw.Graph.Initializer {
		ref, err := parseExternal(tp)
		if err != nil {
			t.Fatal(err)
		}
		if ref.location != loc || ref.offset%4096 != 0 || ref.offset != int64(i)*4096 {
			t.Errorf("tensor %s: location %q offset %d, want %s at %d", tp.GetName(), ref.location, ref.offset, loc, i*4096)
		}
	}
	full, err := LoadWith(p, LoadOptions{LoadExternalData: true})
	if err != nil {
		t.Fatal(err)
	}
	bt, _ := TensorFromProto(full.Graph.Initializer[1])
	if v, _ := bt.Float32s(); len(v) != 3 || v[2] != 3 {
		t.Errorf("b = %v", v)
	}
	if err := WriteFile(p, bigModel(), WriteOptions{ExternalDataThreshold: 1, ExternalDataFile: "../x.bin"}); err == nil {
		t.Error("an ExternalDataFile outside the model's directory was accepted")
	}
}

func TestWriteFileSwitchesToExternalDataOverTheLimit(t *testing.T) {
	old := maxProtoSize
	oldAuto := autoExternalThreshold
	maxProtoSize = 300 // pretend protobuf's limit is 300 bytes
	autoExternalThreshold = 100
	defer func() { maxProtoSize, autoExternalThreshold = old, oldAuto }()
	if _, err := Marshal(bigModel()); err == nil || !strings.Contains(err.Error(), "2 GiB") {
		t.Errorf("Marshal over the limit: %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "m.onnx")
	if err := WriteFile(p, bigModel(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, dataFileOf(t, p, "m.onnx.data"))); err != nil || st.Size() != 400 {
		t.Fatalf("want w (400 bytes) in external data for a model over the limit: %v", err)
	}
	full, err := LoadWith(p, LoadOptions{LoadExternalData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Graph.Initializer[0].RawData) != 400 {
		t.Error("w not restored")
	}
}

func TestWriteFileFailuresLeaveNothingBehind(t *testing.T) {
	dir := t.TempDir()
	// A parent directory that does not exist.
	if err := WriteFile(filepath.Join(dir, "no", "such", "m.onnx"), bigModel(), WriteOptions{}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	// The final name is a directory: the rename fails after everything
	// was written; the temporary files must go.
	isDir := filepath.Join(dir, "d.onnx")
	os.Mkdir(isDir, 0o755)
	if err := WriteFile(isDir, bigModel(), WriteOptions{ExternalDataThreshold: 1}); err == nil {
		t.Error("writing over a directory succeeded")
	}
	noTemps(t, dir)
	if got := dirNames(t, dir); got != "d.onnx" {
		t.Errorf("after a failed graph write the directory holds %s: the new data file must go too", got)
	}
	// The data file's name is a directory: the existing model is untouched.
	// (The same model written elsewhere gives the data file's name.)
	elsewhere := filepath.Join(t.TempDir(), "m.onnx")
	if err := WriteFile(elsewhere, bigModel(), WriteOptions{ExternalDataThreshold: 1}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(p, []byte("old model"), 0o644); err != nil {
		t.Fatal(err)
	}
	inTheWay := filepath.Join(dir, dataFileOf(t, elsewhere, "m.onnx.data"))
	os.Mkdir(inTheWay, 0o755)
	os.WriteFile(filepath.Join(inTheWay, "keep"), []byte("x"), 0o644)
	if err := WriteFile(p, bigModel(), WriteOptions{ExternalDataThreshold: 1}); err == nil {
		t.Error("writing with a directory in the data file's place succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "old model" {
		t.Errorf("existing model changed to %q by a failed write", b)
	}
	if _, err := os.Stat(filepath.Join(inTheWay, "keep")); err != nil {
		t.Errorf("the directory in the data file's place changed: %v", err)
	}
	noTemps(t, dir)
	// An invalid model writes nothing at all.
	g := builder.New("g")
	g.Input("x", builder.Float, builder.Dims(1))
	if err := WriteFile(filepath.Join(dir, "bad.onnx"), builder.NewModel(g), WriteOptions{}); err == nil {
		t.Error("an invalid model was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.onnx")); !os.IsNotExist(err) {
		t.Error("bad.onnx exists")
	}
	// A read-only directory (meaningless as root, who may write anyway).
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		if err := WriteFile(filepath.Join(ro, "m.onnx"), bigModel(), WriteOptions{}); err == nil {
			t.Error("writing into a read-only directory succeeded")
		}
		noTemps(t, ro)
	}
}

// externalModel writes a model whose one initializer refers to location
// at offset/length, next to a 400-byte data file "w.bin".
func externalModel(t *testing.T, location string, offset, length int64) string {
	t.Helper()
	dir := t.TempDir()
	data := make([]byte, 400)
	for i := 0; i < 100; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)))
	}
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mp, err := ToProto(bigModel())
	if err != nil {
		t.Fatal(err)
	}
	w := mp.Graph.Initializer[0]
	w.RawData = nil
	w.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	w.ExternalData = []*onnxpb.StringStringEntryProto{
		{Key: proto.String("location"), Value: proto.String(location)},
		{Key: proto.String("offset"), Value: proto.String(strconv.FormatInt(offset, 10))},
		{Key: proto.String("length"), Value: proto.String(strconv.FormatInt(length, 10))},
	}
	b, err := MarshalProto(mp)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadExternalDataRefusesUnsafeLocations(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.bin")
	os.WriteFile(outside, make([]byte, 400), 0o644)
	linked := externalModel(t, "link.bin", 0, 400)
	if err := os.Symlink(outside, filepath.Join(filepath.Dir(linked), "link.bin")); err != nil {
		t.Fatal(err)
	}
	inside := externalModel(t, "inlink.bin", 0, 400)
	os.Symlink("w.bin", filepath.Join(filepath.Dir(inside), "inlink.bin"))
	cases := []struct {
		name, path, want string
	}{
		{"ok", externalModel(t, "w.bin", 0, 400), ""},
		{"symlink inside", inside, ""},
		{"dot-dot", externalModel(t, "../w.bin", 0, 400), `".." component`},
		{"nested dot-dot", externalModel(t, "sub/../../w.bin", 0, 400), `".." component`},
		{"absolute", externalModel(t, outside, 0, 400), "absolute path"},
		{"symlink out", linked, "outside the model's directory"},
		{"offset beyond", externalModel(t, "w.bin", 4096, 400), "offset 4096 is beyond the end"},
		{"length beyond", externalModel(t, "w.bin", 100, 400), "runs past the end"},
		{"wrong length", externalModel(t, "w.bin", 0, 396), "has 396 bytes, want 400"},
		{"missing", externalModel(t, "nope.bin", 0, 400), "nope.bin"},
	}
	for _, c := range cases {
		mp, err := LoadWith(c.path, LoadOptions{LoadExternalData: true})
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if v, _ := TensorFromProto(mp.Graph.Initializer[0]); v == nil || len(v.Raw) != 400 || v.Raw[4] != 0 || v.Raw[7] != 0x3f {
				t.Errorf("%s: wrong data loaded", c.name)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "m.onnx") {
			t.Errorf("%s: error %v, want one naming m.onnx and saying %q", c.name, err, c.want)
		}
		// Without LoadExternalData, the same file loads (references kept).
		if _, err := Load(c.path); err != nil {
			t.Errorf("%s: plain Load: %v", c.name, err)
		}
	}
}

// TestWriteFileCrashNeverMismatches stops WriteFile where a crash could
// (after the data file is renamed in, after the graph is) and checks that
// the model on disk, loaded with its external data, is then exactly the
// old or exactly the new one, and that the next complete write leaves only
// the graph and its data file.
func TestWriteFileCrashNeverMismatches(t *testing.T) {
	ext := WriteOptions{ExternalDataThreshold: 100}
	inline := WriteOptions{}
	cases := []struct {
		name           string
		oldOpt, newOpt WriteOptions
		stage          string
		want           string // "old" or "new"
	}{
		{"external over external, after the data", ext, ext, "data", "old"},
		{"external over external, after the graph", ext, ext, "graph", "new"},
		{"external over inline, after the data", inline, ext, "data", "old"},
		{"external over inline, after the graph", inline, ext, "graph", "new"},
		{"inline over external, after the graph", ext, inline, "graph", "new"},
	}
	crash := errors.New("crash")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "m.onnx")
			oldM, newM := bigModelWith(0.5), bigModelWith(-2)
			if err := WriteFile(p, oldM, c.oldOpt); err != nil {
				t.Fatal(err)
			}
			testHookCommitted = func(stage string) error {
				if stage == c.stage {
					return crash
				}
				return nil
			}
			err := WriteFile(p, newM, c.newOpt)
			testHookCommitted = nil
			if !errors.Is(err, crash) {
				t.Fatalf("the write did not stop at %q: %v", c.stage, err)
			}
			got, err := LoadWith(p, LoadOptions{LoadExternalData: true})
			if err != nil {
				t.Fatalf("after the crash the model does not load with its data: %v", err)
			}
			want := map[string]*builder.Model{"old": oldM, "new": newM}[c.want]
			wantProto, _ := ToProto(want)
			if !proto.Equal(got, wantProto) {
				t.Fatalf("after a crash at %q the model on disk is not the %s one", c.stage, c.want)
			}
			// The next complete write cleans up what the crash left.
			if err := WriteFile(p, newM, c.newOpt); err != nil {
				t.Fatal(err)
			}
			wantNames := "m.onnx"
			if c.newOpt.ExternalDataThreshold > 0 {
				wantNames += "," + dataFileOf(t, p, "m.onnx.data")
			}
			if got := dirNames(t, dir); got != wantNames {
				t.Errorf("after a complete write the directory holds %s, want %s", got, wantNames)
			}
		})
	}
}

// TestWriteFileExternalDataIsReproducible: the same model written twice
// gives the same graph and data file; a different one replaces both.
func TestWriteFileExternalDataIsReproducible(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.onnx")
	opt := WriteOptions{ExternalDataThreshold: 100}
	write := func(m *builder.Model) (string, []byte) {
		t.Helper()
		if err := WriteFile(p, m, opt); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		return dataFileOf(t, p, "m.onnx.data"), b
	}
	loc1, g1 := write(bigModel())
	loc2, g2 := write(bigModel())
	if loc1 != loc2 || !bytes.Equal(g1, g2) {
		t.Errorf("writing the same model twice gave %s and %s", loc1, loc2)
	}
	loc3, _ := write(bigModelWith(3))
	if loc3 == loc1 {
		t.Errorf("different data, same file name %s", loc3)
	}
	if got := dirNames(t, dir); got != "m.onnx,"+loc3 {
		t.Errorf("directory holds %s, want m.onnx and %s only", got, loc3)
	}
}

func TestTaggedDataName(t *testing.T) {
	const tag = "0123456789abcdef"
	for _, c := range []struct{ name, want string }{
		{"m.onnx.data", "m.onnx." + tag + ".data"},
		{"weights.bin", "weights." + tag + ".bin"},
		{"weights", "weights." + tag},
		{".hidden", "." + tag + ".hidden"},
	} {
		got := taggedDataName(c.name, tag)
		if got != c.want {
			t.Errorf("taggedDataName(%q) = %q, want %q", c.name, got, c.want)
		}
		if !isTaggedDataName(c.name, got) {
			t.Errorf("isTaggedDataName(%q, %q) = false", c.name, got)
		}
	}
	for _, other := range []string{"m.onnx.data", "m.onnx.0123.data", "m.onnx.0123456789ABCDEF.data", "m.onnx.0123456789abcdefg.data", "n.onnx.0123456789abcdef.data", "m.onnx.0123456789abcdef.bin"} {
		if isTaggedDataName("m.onnx.data", other) {
			t.Errorf("isTaggedDataName(m.onnx.data, %q) = true", other)
		}
	}
}
