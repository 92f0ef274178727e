package onnxrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

// affine is y = x·W + b, W [3, 2]: a model for the native backend's tests.
func affine(t *testing.T) []byte {
	t.Helper()
	g := builder.New("affine")
	x := g.Input("x", builder.Float, builder.Dims("batch", 3))
	w := g.Init("w", builder.FloatTensor([]int64{3, 2}, []float32{1, 2, 3, 4, 5, 6}))
	b := g.Init("b", builder.FloatTensor([]int64{2}, []float32{0.5, -0.5}))
	g.Output("y", ops.Add(ops.MatMul(x, w), b))
	data, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestNativeSession runs a model on the native backend through Run and
// through a Binding, without ONNX Runtime.
func TestNativeSession(t *testing.T) {
	if err := Ready(BackendGo); err != nil {
		t.Fatal(err)
	}
	s, err := OpenBytes(affine(t), Options{Backend: BackendGo, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Backend() != BackendGo || s.Device() != DeviceCPU {
		t.Errorf("backend %q device %q", s.Backend(), s.Device())
	}
	x := NewFloat32([]int64{2, 3}, []float32{1, 0, 0, 0, 1, 1})
	out, err := s.Run(map[string]*Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	y, _ := out["y"].Float32s()
	if want := []float32{1.5, 1.5, 8.5, 9.5}; !slices.Equal(y, want) {
		t.Errorf("Run: y = %v, want %v", y, want)
	}
	bd, err := s.NewBinding()
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	in := NewFloat32([]int64{1, 3}, []float32{0, 0, 1})
	res := NewFloat32([]int64{1, 2}, make([]float32, 2))
	if err := bd.BindInputTensor("x", in); err != nil {
		t.Fatal(err)
	}
	if err := bd.BindOutputTensor("y", res); err != nil {
		t.Fatal(err)
	}
	for step, v := range []float32{1, 2} {
		in.Data.([]float32)[2] = v // changed in place between runs
		if err := bd.Run(); err != nil {
			t.Fatal(err)
		}
		if want := []float32{5*v + 0.5, 6*v - 0.5}; !slices.Equal(res.Data.([]float32), want) {
			t.Errorf("binding run %d: y = %v, want %v", step, res.Data, want)
		}
	}
	// A bound output of the wrong shape is caught when the run's result
	// does not fit it.
	if err := bd.BindOutputTensor("y", NewFloat32([]int64{2, 2}, make([]float32, 4))); err != nil {
		t.Fatal(err)
	}
	if err := bd.Run(); err == nil || !strings.Contains(err.Error(), `output "y" is float32[1,2]`) {
		t.Errorf("run into a [2,2] output: %v", err)
	}
}

func TestNativeOptionsRefused(t *testing.T) {
	data := affine(t)
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{Backend: BackendGo, Device: DeviceCUDA}, "runs on the CPU only"},
		{Options{Backend: "tpu"}, `unknown backend "tpu"`},
		{Options{Backend: BackendGo, IntraOpThreads: -1}, "IntraOpThreads=-1"},
	} {
		if _, err := OpenBytes(data, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.opt, err, c.want)
		}
	}
	if _, err := OpenBytes([]byte("not a model"), Options{Backend: BackendGo}); err == nil || !strings.Contains(err.Error(), "not an ONNX model") {
		t.Errorf("garbage: %v", err)
	}
}

// TestDefaultBackend: Options{} runs on the native backend; Device "cuda"
// with no Backend asks ONNX Runtime (where the build has it); "auto" falls
// back to the native backend with a note saying why when CUDA cannot be
// used, and an unknown device is refused as such.
func TestDefaultBackend(t *testing.T) {
	s, err := OpenBytes(affine(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Backend() != BackendGo || s.Device() != DeviceCPU {
		t.Errorf("Options{}: backend %q device %q, want go on the cpu", s.Backend(), s.Device())
	}
	s.Close()
	if got := BackendFor("", DeviceCUDA); HasORT && got != BackendORT || !HasORT && got != BackendGo {
		t.Errorf("BackendFor(\"\", cuda) = %q (HasORT %v)", got, HasORT)
	}
	if got := BackendFor(BackendGo, DeviceCUDA); got != BackendGo {
		t.Errorf("BackendFor(go, cuda) = %q, want go: an explicit backend wins", got)
	}
	s, err = OpenBytes(affine(t), Options{Device: DeviceAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Device() == DeviceCPU && (s.Backend() != BackendGo || len(s.Notes()) != 1 || !strings.Contains(s.Notes()[0], "CUDA unavailable")) {
		t.Errorf("auto without CUDA: backend %q, notes %q; want go with a note", s.Backend(), s.Notes())
	}
	if _, err := OpenBytes(affine(t), Options{Device: "tpu"}); err == nil || !strings.Contains(err.Error(), `unknown device "tpu"`) {
		t.Errorf("device tpu: %v", err)
	}
}
