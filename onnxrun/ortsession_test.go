//go:build cgo

package onnxrun

import (
	"errors"
	"fmt"
	"github.com/attnx/attnx/onnxfile"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	ort "github.com/yalue/onnxruntime_go"
)

// The models under testdata/ are written by testdata/gen_models.py.

// needORT initialises ORT; see testenv.ORT for an absent library.
func needORT(t *testing.T) {
	t.Helper()
	testenv.ORT(t, Init())
}

func openModel(t *testing.T, name string, opt Options) *Session {
	t.Helper()
	needORT(t)
	s, err := Open(filepath.Join("testdata", name+".onnx"), opt)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInitConcurrentAndVersion(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Init()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		testenv.ORT(t, err)
	}
	if p := LibraryPath(); os.Getenv(EnvLib) == "" && !strings.HasSuffix(p, projectLib) {
		t.Errorf("LibraryPath() = %q, want the project install ending in %s", p, projectLib)
	}
	if v := Version(); v != "1.24.1" {
		t.Errorf("Version() = %q, want 1.24.1 (the version install-deps.sh installs)", v)
	}
}

// TestInitChild is the child half of TestInitErrors: it only does something
// when re-executed with ATTNX_RUNTIME_TEST_CHILD set, since ORT can be
// initialised once per process.
func TestInitChild(t *testing.T) {
	if os.Getenv("ATTNX_RUNTIME_TEST_CHILD") == "" {
		t.Skip("helper process for TestInitErrors")
	}
	// As a binary built outside this checkout: no module install.
	moduleLib = ""
	err := Init()
	fmt.Printf("INIT-RESULT: %v\n", err)
	fmt.Printf("INIT-NOT-EXIST: %v\n", errors.Is(err, fs.ErrNotExist))
	// A second call must give the same answer without retrying.
	if err2 := Init(); fmt.Sprint(err2) != fmt.Sprint(err) {
		fmt.Printf("INIT-SECOND-DIFFERS: %v\n", err2)
	}
	_, oerr := Open(filepath.Join(os.Getenv("ATTNX_RUNTIME_TEST_MODELS"), "add.onnx"), Options{Backend: BackendORT})
	fmt.Printf("OPEN-RESULT: %v\n", oerr)
}

func TestInitErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "libonnxruntime.so.1")
	if err := os.WriteFile(text, []byte("this is not a shared library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	models, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	// A library planted above the working directory, where anyone can
	// write (as /tmp/.deps/... would be): never loaded.
	work := filepath.Join(dir, "work", "sub")
	planted := filepath.Join(dir, projectLib)
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The real library, copied with modes others could write.
	testenv.ORT(t, Init())
	real, err := os.ReadFile(LibraryPath())
	if err != nil {
		t.Fatal(err)
	}
	groupWritable := filepath.Join(dir, "gw", "libonnxruntime.so.1")
	openDir := filepath.Join(dir, "open", "libonnxruntime.so.1")
	for _, p := range []string{groupWritable, openDir} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, real, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(groupWritable, 0o664); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(openDir), 0o777); err != nil {
		t.Fatal(err)
	}
	// INIT-NOT-EXIST: absent libraries are fs.ErrNotExist (testenv.ORT then
	// skips outside CI), a broken one is not.
	tests := []struct {
		name string
		lib  string // "" = unset
		want []string
	}{
		{"nonexistent path", filepath.Join(dir, "nope", "libonnxruntime.so.1"),
			[]string{"ATTNX_ORT_LIB=" + dir, "no such file or directory", "install ONNX Runtime 1.24.x", "name the file in ATTNX_ORT_LIB or in Options.ORTLibrary", "INIT-NOT-EXIST: true"}},
		{"text file", text,
			[]string{"ATTNX_ORT_LIB=" + text + " is not a loadable ONNX Runtime library", "install ONNX Runtime 1.24.x", "INIT-NOT-EXIST: false"}},
		{"nothing installed anywhere", "",
			[]string{"INIT-NOT-EXIST: true", "the ONNX Runtime shared library was not found", "Options.ORTLibrary (unset), ATTNX_ORT_LIB (unset)",
				"/usr/lib/libonnxruntime.so.1", "/usr/local/lib/libonnxruntime.so.1", "libonnxruntime.so (the dynamic loader's search)",
				"install ONNX Runtime 1.24.x for the CPU", "name the file in ATTNX_ORT_LIB or in Options.ORTLibrary", "make deps installs it in .deps/"}},
		{"group-writable library", groupWritable,
			[]string{"ATTNX_ORT_LIB=" + groupWritable + ": refusing " + groupWritable + ": it is writable by its group or by everyone (mode 0664)", "INIT-NOT-EXIST: false"}},
		{"library in a directory anyone can write", openDir,
			[]string{"refusing " + openDir + ": its directory " + filepath.Dir(openDir) + " is writable by everyone (mode 0777, no sticky bit)", "INIT-NOT-EXIST: false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestInitChild$", "-test.v")
			cmd.Dir = work // a library is planted above it; the test binary lives in a temp dir
			env := []string{"ATTNX_RUNTIME_TEST_CHILD=1", "ATTNX_RUNTIME_TEST_MODELS=" + models}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, EnvLib+"=") && !strings.HasPrefix(kv, "LD_LIBRARY_PATH=") {
					env = append(env, kv)
				}
			}
			if tc.lib != "" {
				env = append(env, EnvLib+"="+tc.lib)
			}
			cmd.Env = env
			outb, err := cmd.CombinedOutput()
			out := string(outb)
			if err != nil {
				t.Fatalf("child failed (it must report, not crash): %v\n%s", err, out)
			}
			if tc.lib == "" && strings.Contains(out, "INIT-RESULT: <nil>") {
				t.Skip("an ONNX Runtime library is installed system-wide; cannot test the not-found message")
			}
			for _, w := range append(tc.want, "INIT-RESULT: onnxrun: ") {
				if !strings.Contains(out, w) {
					t.Errorf("child output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, planted) {
				t.Errorf("the library planted above the working directory was looked at:\n%s", out)
			}
			if strings.Contains(out, "INIT-SECOND-DIFFERS") {
				t.Errorf("second Init differs:\n%s", out)
			}
			if !strings.Contains(out, "OPEN-RESULT: onnxrun: ") {
				t.Errorf("Open after failed Init did not return the Init error:\n%s", out)
			}
		})
	}
}

func TestIOInfo(t *testing.T) {
	s := openModel(t, "batch", Options{Backend: BackendORT})
	tests := []struct {
		got  IOInfo
		want IOInfo
		str  string
	}{
		{s.Inputs()[0], IOInfo{Name: "source_ids", Kind: "tensor", Type: Int64, Shape: []int64{-1, -1},
			DimNames: []string{"batch", "src_len"}, RankKnown: true}, "int64[batch,src_len]"},
		{s.Inputs()[1], IOInfo{Name: "scale", Kind: "tensor", Type: Float32, Shape: []int64{1},
			DimNames: []string{""}, RankKnown: true}, "float32[1]"},
		{s.Outputs()[0], IOInfo{Name: "out", Kind: "tensor", Type: Float32, Shape: []int64{-1, -1},
			DimNames: []string{"batch", "src_len"}, RankKnown: true}, "float32[batch,src_len]"},
	}
	if len(s.Inputs()) != 2 || len(s.Outputs()) != 1 {
		t.Fatalf("inputs %v outputs %v: want 2 inputs (the initializer excluded) and 1 output", s.Inputs(), s.Outputs())
	}
	for _, tc := range tests {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("got %+v\nwant %+v", tc.got, tc.want)
		}
		if tc.got.String() != tc.str {
			t.Errorf("String() = %q, want %q", tc.got.String(), tc.str)
		}
	}
	sc := openModel(t, "scalar_out", Options{Backend: BackendORT})
	if o := sc.Outputs()[0]; !o.RankKnown || len(o.Shape) != 0 || o.String() != "float32[]" {
		t.Errorf("scalar output described as %+v (%s)", o, o)
	}
	ns := openModel(t, "noshape", Options{Backend: BackendORT})
	if o := ns.Outputs()[0]; o.RankKnown || o.Shape != nil || o.String() != "float32[...]" {
		t.Errorf("shapeless output described as %+v (%s)", o, o)
	}
	if s.Device() != "cpu" || len(s.Notes()) != 0 {
		t.Errorf("Device()=%q Notes()=%v, want cpu and none", s.Device(), s.Notes())
	}
}

func TestRunValues(t *testing.T) {
	tests := []struct {
		model  string
		opt    Options
		inputs map[string]*Tensor
		want   map[string]*Tensor
	}{
		{"add", Options{Backend: BackendORT}, map[string]*Tensor{
			"X": NewFloat32([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
			"Y": NewFloat32([]int64{2, 3}, []float32{0.5, -2, 10, 0, 0.25, -6}),
		}, map[string]*Tensor{"Z": NewFloat32([]int64{2, 3}, []float32{1.5, 0, 13, 4, 5.25, 0})}},
		{"batch", Options{Backend: BackendORT, IntraOpThreads: 2, OptLevel: OptDisable}, map[string]*Tensor{
			"source_ids": NewInt64([]int64{2, 3}, []int64{1, 2, 3, 40, 50, 60}),
			"scale":      NewFloat32([]int64{1}, []float32{2}),
		}, map[string]*Tensor{"out": NewFloat32([]int64{2, 3}, []float32{2.5, 4.5, 6.5, 80.5, 100.5, 120.5})}},
		{"batch", Options{Backend: BackendORT, OptLevel: OptExtended}, map[string]*Tensor{
			"source_ids": NewInt64([]int64{1, 1}, []int64{7}),
			"scale":      NewFloat32([]int64{1}, []float32{-1}),
		}, map[string]*Tensor{"out": NewFloat32([]int64{1, 1}, []float32{-6.5})}},
		{"scalar_out", Options{Backend: BackendORT}, map[string]*Tensor{
			"X": NewFloat32([]int64{4}, []float32{1, 2, 3, 4.5}),
		}, map[string]*Tensor{
			"total":   Scalar(float32(10.5)),
			"doubled": NewFloat32([]int64{4}, []float32{2, 4, 6, 9}),
		}},
		{"scalar_in", Options{Backend: BackendORT}, map[string]*Tensor{"x": Scalar(float32(1.5))},
			map[string]*Tensor{"y": Scalar(float32(4.5))}},
		{"constant", Options{Backend: BackendORT}, map[string]*Tensor{}, map[string]*Tensor{
			"matrix": NewFloat32([]int64{2, 2}, []float32{1, 2, 3, 4}),
			"count":  Scalar(int64(7)),
		}},
		{"noshape", Options{Backend: BackendORT}, map[string]*Tensor{"X": NewFloat32([]int64{2}, []float32{3, 4})},
			map[string]*Tensor{"Y": NewFloat32([]int64{2}, []float32{3, 4})}},
		{"constant", Options{Backend: BackendORT}, nil, map[string]*Tensor{
			"matrix": NewFloat32([]int64{2, 2}, []float32{1, 2, 3, 4}),
			"count":  Scalar(int64(7)),
		}},
		{"identity", Options{Backend: BackendORT}, map[string]*Tensor{
			"in_f64": NewFloat64([]int64{2}, []float64{1.25, -3}),
			"in_i32": NewInt32([]int64{2}, []int32{-7, 1 << 30}),
			"in_i8":  NewInt8([]int64{2}, []int8{-128, 127}),
			"in_u8":  NewUint8([]int64{2}, []uint8{0, 255}),
			"in_b":   NewBool([]int64{2}, []bool{true, false}),
			"in_s":   NewString([]int64{2}, []string{"héllo", ""}),
			"in_i16": NewTensor([]int64{2}, []int16{-300, 300}),
			"in_u64": NewTensor([]int64{2}, []uint64{1 << 63, 3}),
		}, map[string]*Tensor{
			"out_f64": NewFloat64([]int64{2}, []float64{1.25, -3}),
			"out_i32": NewInt32([]int64{2}, []int32{-7, 1 << 30}),
			"out_i8":  NewInt8([]int64{2}, []int8{-128, 127}),
			"out_u8":  NewUint8([]int64{2}, []uint8{0, 255}),
			"out_b":   NewBool([]int64{2}, []bool{true, false}),
			"out_s":   NewString([]int64{2}, []string{"héllo", ""}),
			"out_i16": NewTensor([]int64{2}, []int16{-300, 300}),
			"out_u64": NewTensor([]int64{2}, []uint64{1 << 63, 3}),
		}},
		{"identity", Options{Backend: BackendORT}, map[string]*Tensor{ // empty tensors
			"in_f64": NewFloat64([]int64{0}, nil),
			"in_i32": NewInt32([]int64{0}, []int32{}),
			"in_i8":  NewInt8([]int64{0}, nil),
			"in_u8":  NewUint8([]int64{0}, nil),
			"in_b":   NewBool([]int64{0}, nil),
			"in_s":   NewString([]int64{0}, nil),
			"in_i16": NewTensor([]int64{0}, []int16{}),
			"in_u64": NewTensor([]int64{0}, []uint64{}),
		}, map[string]*Tensor{
			"out_f64": NewFloat64([]int64{0}, []float64{}),
			"out_i32": NewInt32([]int64{0}, []int32{}),
			"out_i8":  NewInt8([]int64{0}, []int8{}),
			"out_u8":  NewUint8([]int64{0}, []uint8{}),
			"out_b":   NewBool([]int64{0}, []bool{}),
			"out_s":   NewString([]int64{0}, []string{}),
			"out_i16": NewTensor([]int64{0}, []int16{}),
			"out_u64": NewTensor([]int64{0}, []uint64{}),
		}},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprintf("%d_%s", i, tc.model), func(t *testing.T) {
			s := openModel(t, tc.model, tc.opt)
			got, err := s.Run(tc.inputs)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d outputs, want %d", len(got), len(tc.want))
			}
			for name, w := range tc.want {
				g := got[name]
				if g == nil {
					t.Errorf("output %q missing", name)
					continue
				}
				if !reflect.DeepEqual(g.Shape, w.Shape) || !reflect.DeepEqual(g.Data, w.Data) {
					t.Errorf("output %q = %s %v, want %s %v", name, g, g.Data, w, w.Data)
				}
			}
		})
	}
}

func TestInputErrors(t *testing.T) {
	batch := openModel(t, "batch", Options{Backend: BackendORT})
	add := openModel(t, "add", Options{Backend: BackendORT})
	ident := openModel(t, "identity", Options{Backend: BackendORT})
	f16 := openModel(t, "float16", Options{Backend: BackendORT})
	ids := NewInt64([]int64{2, 5}, make([]int64, 10))
	scale := NewFloat32([]int64{1}, []float32{1})
	two := func(name string) map[string]*Tensor {
		m := map[string]*Tensor{}
		for _, in := range ident.Inputs() {
			m[in.Name] = nil
		}
		m["in_f64"] = NewFloat64([]int64{2}, []float64{1, 2})
		m["in_i32"] = NewInt32([]int64{2}, []int32{1, 2})
		m["in_i8"] = NewInt8([]int64{2}, []int8{1, 2})
		m["in_u8"] = NewUint8([]int64{2}, []uint8{1, 2})
		m["in_b"] = NewBool([]int64{2}, []bool{true, false})
		m["in_s"] = NewString([]int64{2}, []string{"a", "b"})
		m["in_i16"] = NewTensor([]int64{2}, []int16{1, 2})
		m["in_u64"] = NewTensor([]int64{2}, []uint64{1, 2})
		m[name] = NewInt32([]int64{3}, []int32{1, 2, 3})
		return m
	}
	tests := []struct {
		name   string
		s      *Session
		inputs map[string]*Tensor
		want   []string
	}{
		{"wrong dtype", batch, map[string]*Tensor{"source_ids": NewFloat32([]int64{2, 5}, make([]float32, 10)), "scale": scale},
			[]string{`input "source_ids": got float32[2,5], model expects int64[batch,src_len]`, "element type float32, want int64"}},
		{"wrong rank", batch, map[string]*Tensor{"source_ids": NewInt64([]int64{10}, make([]int64, 10)), "scale": scale},
			[]string{`input "source_ids": got int64[10], model expects int64[batch,src_len]`, "rank 1, want 2"}},
		{"fixed dim disagrees", batch, map[string]*Tensor{"source_ids": ids, "scale": NewFloat32([]int64{2}, []float32{1, 2})},
			[]string{`input "scale": got float32[2], model expects float32[1]`, "dimension 0 is 2, want 1"}},
		{"data length", add, map[string]*Tensor{"X": NewFloat32([]int64{2, 3}, make([]float32, 5)), "Y": NewFloat32([]int64{2, 3}, make([]float32, 6))},
			[]string{`input "X": got float32[2,3], model expects float32[2,3]`, "shape holds 6 elements but data has 5"}},
		{"missing", batch, map[string]*Tensor{"source_ids": ids},
			[]string{`missing input "scale" (float32[1])`, `the model's inputs are "source_ids" int64[batch,src_len], "scale" float32[1]`}},
		{"unknown", batch, map[string]*Tensor{"source_ids": ids, "scale": scale, "target_ids": ids},
			[]string{`unknown input "target_ids"`, `"source_ids" int64[batch,src_len]`}},
		{"nil tensor", batch, map[string]*Tensor{"source_ids": nil, "scale": scale},
			[]string{`input "source_ids": nil tensor, model expects int64[batch,src_len]`}},
		{"unsupported Go type", add, map[string]*Tensor{"X": {Shape: []int64{2, 3}, Data: make([]complex64, 6)}, "Y": NewFloat32([]int64{2, 3}, make([]float32, 6))},
			[]string{`input "X": got []complex64[2,3]`, "unsupported data type []complex64"}},
		{"negative dim", add, map[string]*Tensor{"X": NewFloat32([]int64{-2, 3}, make([]float32, 6)), "Y": NewFloat32([]int64{2, 3}, make([]float32, 6))},
			[]string{`input "X"`, "dimension 0 is negative"}},
		{"symbolic dim disagrees across inputs", ident, two("in_i32"),
			[]string{`input "in_i32": got int32[3], model expects int32[d]`, `dimension 0 (d) is 3, but input "in_f64" has d=2`}},
		{"zero inputs, output shape not fixed", openModel(t, "free_const", Options{Backend: BackendORT}), nil,
			[]string{`has no inputs and its output "v" is declared int64[1,n]`, "fully known shape"}},
		{"unknown input on a zero-input model", openModel(t, "free_const", Options{Backend: BackendORT}), map[string]*Tensor{"x": Scalar1(1)},
			[]string{`unknown input "x"; the model's inputs are (none)`}},
		{"float16 wrong element type", f16, map[string]*Tensor{"h": NewUint8([]int64{2}, []uint8{0, 0})},
			[]string{`input "h": got uint8[2], model expects float16[2]`, "element type uint8, want float16"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.s.Run(tc.inputs)
			if err == nil {
				t.Fatalf("Run succeeded (%v), want an error", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	needORT(t)
	if _, err := Open(filepath.Join("testdata", "missing.onnx"), Options{Backend: BackendORT}); err == nil || !strings.Contains(err.Error(), "missing.onnx") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := OpenBytes([]byte("not a model"), Options{Backend: BackendORT}); err == nil || !strings.Contains(err.Error(), "loading model bytes") {
		t.Errorf("garbage bytes: %v", err)
	}
	if _, err := OpenBytes(nil, Options{Backend: BackendORT}); err == nil || !strings.Contains(err.Error(), "empty model") {
		t.Errorf("no bytes: %v", err)
	}
	add := filepath.Join("testdata", "add.onnx")
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Backend: BackendORT, Device: "tpu"}, `unknown device "tpu": want "cpu", "cuda" or "auto"`},
		{Options{Backend: BackendORT, IntraOpThreads: -1}, "IntraOpThreads=-1"},
		{Options{Backend: BackendORT, OptLevel: 42}, "unknown OptLevel 42"},
	} {
		if _, err := Open(add, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want error containing %q", tc.opt, err, tc.want)
		}
	}
}

func TestOpenBytesAndOptimizedModel(t *testing.T) {
	needORT(t)
	data, err := os.ReadFile(filepath.Join("testdata", "batch.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	optPath := filepath.Join(t.TempDir(), "optimized.onnx")
	s, err := OpenBytes(data, Options{Backend: BackendORT, IntraOpThreads: 1, InterOpThreads: 1, OptLevel: OptAll, OptimizedModelPath: optPath})
	if err != nil {
		t.Fatalf("OpenBytes: %v", err)
	}
	defer s.Close()
	if got := s.Inputs()[0].String(); got != "int64[batch,src_len]" {
		t.Errorf("input 0 = %s", got)
	}
	out, err := s.Run(map[string]*Tensor{"source_ids": NewInt64([]int64{1, 2}, []int64{1, 2}), "scale": NewFloat32([]int64{1}, []float32{3})})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := out["out"].Float32s(); !reflect.DeepEqual(got, []float32{3.5, 6.5}) {
		t.Errorf("out = %v, want [3.5 6.5]", got)
	}
	if st, err := os.Stat(optPath); err != nil || st.Size() == 0 {
		t.Errorf("optimized model not saved at %s: %v", optPath, err)
	}
}

func TestDevices(t *testing.T) {
	needORT(t)
	add := filepath.Join("testdata", "add.onnx")
	s, err := Open(add, Options{Backend: BackendORT, Device: DeviceCUDA})
	if err == nil {
		s.Close()
		t.Skip("CUDA is available here; the unavailable-CUDA message cannot be tested")
	}
	for _, w := range []string{`the cuda device was asked for but CUDA cannot be used`, "ONNX Runtime 1.24.1", "adding the CUDA execution provider: ", "CPU-only", `use Device "cpu", or "auto" to fall back to CPU`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("cuda error %q\nlacks %q", err, w)
		}
	}
	t.Logf("cuda error: %v", err)

	s, err = Open(add, Options{Backend: BackendORT, Device: DeviceAuto})
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	defer s.Close()
	if s.Device() != DeviceCPU {
		t.Errorf("auto Device() = %q, want cpu", s.Device())
	}
	if n := s.Notes(); len(n) != 1 || !strings.HasPrefix(n[0], "CUDA unavailable (") || !strings.HasSuffix(n[0], "), using CPU") {
		t.Errorf("auto Notes() = %q", n)
	}
	out, err := s.Run(map[string]*Tensor{"X": NewFloat32([]int64{2, 3}, make([]float32, 6)), "Y": NewFloat32([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})})
	if err != nil || !reflect.DeepEqual(out["Z"].Data, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("auto session run: %v %v", out, err)
	}
}

func TestConcurrentRun(t *testing.T) {
	s := openModel(t, "batch", Options{Backend: BackendORT, IntraOpThreads: 1})
	const workers, runs = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < runs; r++ {
				n := int64(w + 1)
				ids := make([]int64, n*3)
				for i := range ids {
					ids[i] = int64(w*1000 + r*10 + i)
				}
				out, err := s.Run(map[string]*Tensor{"source_ids": NewInt64([]int64{n, 3}, ids), "scale": Scalar1(float32(w))})
				if err != nil {
					errs <- err
					return
				}
				got, _ := out["out"].Float32s()
				if int64(len(got)) != n*3 || !reflect.DeepEqual(out["out"].Shape, []int64{n, 3}) {
					errs <- fmt.Errorf("worker %d run %d: shape %v", w, r, out["out"].Shape)
					return
				}
				for i, g := range got {
					if want := float32(ids[i])*float32(w) + 0.5; g != want {
						errs <- fmt.Errorf("worker %d run %d: out[%d] = %v, want %v", w, r, i, g, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Scalar1 is a one-element rank-1 float32 tensor.
func Scalar1(v float32) *Tensor { return NewFloat32([]int64{1}, []float32{v}) }

func TestClose(t *testing.T) {
	s := openModel(t, "add", Options{Backend: BackendORT})
	b, err := s.NewBinding()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Run(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
	if err := s.RunValues(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("RunValues after Close: %v, want ErrClosed", err)
	}
	if _, err := s.NewBinding(); !errors.Is(err, ErrClosed) {
		t.Errorf("NewBinding after Close: %v, want ErrClosed", err)
	}
	if err := b.Run(); !errors.Is(err, ErrClosed) {
		t.Errorf("Binding.Run after Session.Close: %v, want ErrClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Binding.Close after Session.Close: %v", err)
	}
}

func TestBinding(t *testing.T) {
	s := openModel(t, "add", Options{Backend: BackendORT})
	x, err := ort.NewTensor(ort.NewShape(2, 3), []float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Destroy()
	y, _ := ort.NewTensor(ort.NewShape(2, 3), []float32{10, 20, 30, 40, 50, 60})
	defer y.Destroy()
	z, _ := ort.NewEmptyTensor[float32](ort.NewShape(2, 3))
	defer z.Destroy()
	wrong, _ := ort.NewEmptyTensor[int64](ort.NewShape(2, 3))
	defer wrong.Destroy()

	b, err := s.NewBinding()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.BindInput("X", x); err != nil {
		t.Fatal(err)
	}
	if err := b.BindInput("Y", y); err != nil {
		t.Fatal(err)
	}
	if err := b.Run(); err == nil || !strings.Contains(err.Error(), `output "Z" (float32[2,3]) is not bound`) {
		t.Errorf("Run with unbound output: %v", err)
	}
	if err := b.BindOutput("Z", z); err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 3; step++ {
		xd := x.GetData()
		for i := range xd {
			xd[i] = float32(step*100 + i)
		}
		if err := b.Run(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for i, g := range z.GetData() {
			if want := float32(step*100+i) + float32(10*(i+1)); g != want {
				t.Errorf("step %d: Z[%d] = %v, want %v", step, i, g, want)
			}
		}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{b.BindInput("W", x), `unknown input "W"; the model's inputs are ["X" float32[2,3] "Y" float32[2,3]]`},
		{b.BindInput("X", wrong), `input "X": got int64[2,3], model expects float32[2,3]: element type int64, want float32`},
		{b.BindOutput("Q", z), `unknown output "Q"`},
		{b.BindInput("X", nil), `input "X": nil value`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("got %v, want error containing %q", tc.err, tc.want)
		}
	}
}

func TestBindingZeroInputs(t *testing.T) {
	s := openModel(t, "constant", Options{Backend: BackendORT})
	m, _ := ort.NewEmptyTensor[float32](ort.NewShape(2, 2))
	defer m.Destroy()
	c, _ := ort.NewEmptyScalar[int64]()
	defer c.Destroy()
	b, err := s.NewBinding()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.BindOutput("matrix", m); err != nil {
		t.Fatal(err)
	}
	if err := b.BindOutput("count", c); err != nil {
		t.Fatal(err)
	}
	if err := b.Run(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.GetData(), []float32{1, 2, 3, 4}) || c.GetData() != 7 {
		t.Errorf("matrix %v count %v", m.GetData(), c.GetData())
	}
	if err := s.RunValues(nil, []ort.Value{m, c}); err == nil || !strings.Contains(err.Error(), "use NewBinding") {
		t.Errorf("RunValues on a zero-input model: %v", err)
	}
}

func TestRunValuesLowLevel(t *testing.T) {
	s := openModel(t, "scalar_out", Options{Backend: BackendORT})
	x, _ := ort.NewTensor(ort.NewShape(3), []float32{1, 2, 4})
	defer x.Destroy()
	total, _ := ort.NewEmptyScalar[float32]()
	defer total.Destroy()
	outs := []ort.Value{total, nil}
	if err := s.RunValues([]ort.Value{x}, outs); err != nil {
		t.Fatal(err)
	}
	defer outs[1].Destroy()
	doubled, err := FromValue(outs[1])
	if err != nil {
		t.Fatal(err)
	}
	if total.GetData() != 7 || !reflect.DeepEqual(doubled.Data, []float32{2, 4, 8}) {
		t.Errorf("total %v doubled %v", total.GetData(), doubled.Data)
	}
	wrong, _ := ort.NewTensor(ort.NewShape(3), []int32{1, 2, 3})
	defer wrong.Destroy()
	if err := s.RunValues([]ort.Value{wrong}, []ort.Value{total, nil}); err == nil ||
		!strings.Contains(err.Error(), `input "X": got int32[3], model expects float32[n]`) {
		t.Errorf("wrong type: %v", err)
	}
	if err := s.RunValues([]ort.Value{x}, nil); err == nil || !strings.Contains(err.Error(), "RunValues got 1 inputs and 0 outputs") {
		t.Errorf("wrong count: %v", err)
	}
}

func TestTensorHelpers(t *testing.T) {
	tests := []struct {
		t    *Tensor
		str  string
		dt   DType
		n    int
		f32s bool
	}{
		{NewFloat32([]int64{2, 5}, make([]float32, 10)), "float32[2,5]", Float32, 10, true},
		{Scalar(int64(3)), "int64[]", Int64, 1, false},
		{NewString([]int64{1}, []string{"a"}), "string[1]", String, 1, false},
		{&Tensor{Shape: []int64{1}, Data: []complex64{1}}, "[]complex64[1]", Undefined, -1, false},
	}
	for _, tc := range tests {
		if tc.t.String() != tc.str || tc.t.DType() != tc.dt || tc.t.Len() != tc.n {
			t.Errorf("%s: String/DType/Len = %q %v %d, want %q %v %d", tc.str, tc.t, tc.t.DType(), tc.t.Len(), tc.str, tc.dt, tc.n)
		}
		if _, err := tc.t.Float32s(); (err == nil) != tc.f32s {
			t.Errorf("%s: Float32s err = %v", tc.str, err)
		}
	}
	shape := []int64{2}
	tt := NewInt64(shape, []int64{1, 2})
	shape[0] = 9
	if tt.Shape[0] != 2 {
		t.Error("NewTensor did not copy the shape")
	}
}

// TestShapeOverflow: a shape whose element count does not fit in int64
// wrapped around (2^32 x 2^32 = 0 elements matched empty data; 2^62 x 2
// went negative and made([]T, n) panicked when preallocating an output).
// Every path must refuse it, naming the shape.
func TestShapeOverflow(t *testing.T) {
	needORT(t)
	huge := &Tensor{Shape: []int64{1 << 32, 1 << 32}, Data: []float32{}}
	const want = "shape [4294967296 4294967296] has more than 9223372036854775807 elements"
	if v, err := NewValue(huge); err == nil || !strings.Contains(err.Error(), want) {
		if err == nil {
			v.Destroy()
		}
		t.Errorf("NewValue: err = %v, want it to contain %q", err, want)
	}
	free := IOInfo{Name: "x", Kind: "tensor", Type: Float32}
	if err := checkTensor(free, huge); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("checkTensor: err = %v, want it to contain %q", err, want)
	}
	if err := checkSequence(free, NewSequence(huge)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("checkSequence: err = %v, want it to contain %q", err, want)
	}
	for _, dt := range []DType{Float32, Float16, Int64} {
		v, err := newEmptyValue(dt, []int64{1 << 62, 2})
		if err == nil {
			v.Destroy()
		}
		if w := "shape [4611686018427387904 2] has more than 9223372036854775807 elements"; err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("newEmptyValue(%s): err = %v, want it to contain %q", dt, err, w)
		}
	}
}

// TestDeclaredIOMatchesORT: where the file declares every input and output
// (Open then takes them from it, so that ONNX Runtime parses the model only
// once), the description equals the one from ONNX Runtime's own view.
func TestDeclaredIOMatchesORT(t *testing.T) {
	testenv.ORT(t, Init())
	files, _ := filepath.Glob("testdata/*.onnx")
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		declIn, declOut, err := onnxfile.ReadGraphIO(data)
		if err != nil {
			continue
		}
		in, okIn := fromDecls(declIn)
		out, okOut := fromDecls(declOut)
		if !okIn || !okOut {
			continue
		}
		ins, outs, err := ort.GetInputOutputInfoWithONNXData(data)
		if err != nil {
			continue // a file ORT refuses (Open reports it)
		}
		decls := map[string]onnxfile.ValueType{}
		for _, d := range append(declIn, declOut...) {
			decls[d.Name] = d.Type
		}
		if want := describe(ins, decls, true); !reflect.DeepEqual(in, want) {
			t.Errorf("%s inputs: declared %+v, ORT %+v", f, in, want)
		}
		want := describe(outs, decls, true)
		// ONNX Runtime may fix an output dimension the file leaves free
		// (free_const.onnx: [1, n] is [1, 2]); the declaration is kept.
		for i := range want {
			for j := range want[i].Shape {
				if i < len(out) && j < len(out[i].Shape) && out[i].Shape[j] == -1 && out[i].DimNames[j] != "" {
					want[i].Shape[j], want[i].DimNames[j] = -1, out[i].DimNames[j]
				}
			}
		}
		if !reflect.DeepEqual(out, want) {
			t.Errorf("%s outputs: declared %+v, ORT %+v", f, out, want)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no model with full declarations in testdata")
	}
	t.Logf("%d models", checked)
}
