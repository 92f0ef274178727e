//go:build cgo

package onnxrun

import (
	"math"
	"reflect"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
)

func TestF16Conversions(t *testing.T) {
	inf := float32(math.Inf(1))
	tests := []struct {
		name string
		f    float32
		bits F16
		back float32 // F16From(f).Float32()
	}{
		{"one", 1, 0x3c00, 1},
		{"minus two", -2, 0xc000, -2},
		{"zero", 0, 0x0000, 0},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000, float32(math.Copysign(0, -1))},
		{"max half", 65504, 0x7bff, 65504},
		{"overflow to inf", 65520, 0x7c00, inf},
		{"inf", inf, 0x7c00, inf},
		{"smallest subnormal", 5.960464477539063e-08, 0x0001, 5.960464477539063e-08},
		{"half the smallest subnormal ties to zero", 2.9802322387695312e-08, 0x0000, 0},
		{"largest subnormal", 6.097555160522461e-05, 0x03ff, 6.097555160522461e-05},
		{"smallest normal", 6.103515625e-05, 0x0400, 6.103515625e-05},
		{"rounds to nearest", 0.1, 0x2e66, 0.0999755859375},
		{"tie to even down", 1 + 1.0/2048, 0x3c00, 1},
		{"tie to even up", 1 + 3.0/2048, 0x3c02, 1 + 2.0/1024},
		{"float32 subnormal", 1e-40, 0x0000, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := F16From(tc.f)
			if h != tc.bits {
				t.Errorf("F16From(%g) = %#04x, want %#04x", tc.f, uint16(h), uint16(tc.bits))
			}
			if got := h.Float32(); math.Float32bits(got) != math.Float32bits(tc.back) {
				t.Errorf("F16(%#04x).Float32() = %g, want %g", uint16(h), got, tc.back)
			}
		})
	}
	if nan := F16From(float32(math.NaN())); !math.IsNaN(float64(nan.Float32())) {
		t.Errorf("NaN became %#04x", uint16(nan))
	}
	// Every half survives float32 and back.
	for b := 0; b < 1<<16; b++ {
		h := F16(b)
		f := h.Float32()
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := F16From(f); back != h {
			t.Fatalf("F16(%#04x) -> %g -> %#04x", b, f, uint16(back))
		}
	}
}

func TestBF16Conversions(t *testing.T) {
	tests := []struct {
		name string
		f    float32
		bits BF16
	}{
		{"one", 1, 0x3f80},
		{"minus two", -2, 0xc000},
		{"pi rounds", math.Pi, 0x4049},
		{"tie to even down", math.Float32frombits(0x3f808000), 0x3f80},
		{"tie to even up", math.Float32frombits(0x3f818000), 0x3f82},
		{"above tie rounds up", math.Float32frombits(0x3f808001), 0x3f81},
		{"inf", float32(math.Inf(-1)), 0xff80},
		{"max rounds to inf", math.MaxFloat32, 0x7f80},
	}
	for _, tc := range tests {
		if got := BF16From(tc.f); got != tc.bits {
			t.Errorf("%s: BF16From(%g) = %#04x, want %#04x", tc.name, tc.f, uint16(got), uint16(tc.bits))
		}
		if got, want := tc.bits.Float32(), math.Float32frombits(uint32(tc.bits)<<16); got != want {
			t.Errorf("%s: Float32 = %g, want %g", tc.name, got, want)
		}
	}
	if nan := BF16From(float32(math.NaN())); !math.IsNaN(float64(nan.Float32())) {
		t.Errorf("NaN became %#04x", uint16(nan))
	}
}

func halves(fs ...float32) []F16 {
	out := make([]F16, len(fs))
	for i, f := range fs {
		out[i] = F16From(f)
	}
	return out
}

func bhalves(fs ...float32) []BF16 {
	out := make([]BF16, len(fs))
	for i, f := range fs {
		out[i] = BF16From(f)
	}
	return out
}

// TestHalfRoundTrip feeds float16 and bfloat16 tensors and reads them back,
// with a fixed output shape and with shapes from the inputs' symbols.
func TestHalfRoundTrip(t *testing.T) {
	t.Run("fixed shape", func(t *testing.T) {
		s := openModel(t, "float16", Options{Backend: BackendORT})
		out, err := s.Run(map[string]*Tensor{"h": NewFloat16([]int64{2}, halves(1.5, -65504))})
		if err != nil {
			t.Fatal(err)
		}
		got := out["h_out"]
		if got.DType() != Float16 || !reflect.DeepEqual(got.Shape, []int64{2}) || !reflect.DeepEqual(got.Data, halves(1.5, -65504)) {
			t.Errorf("h_out = %s %v", got, got.Data)
		}
	})
	t.Run("symbolic shapes", func(t *testing.T) {
		s := openModel(t, "half", Options{Backend: BackendORT})
		xs := []float32{0.1, -3, 1e5, 1 + 1.0/2048, 2.5e-8}
		h := halves(0.5, -1, 65504, 6e-8, 3.140625)
		b := bhalves(0.5, -1, 3e38, 1e-30, math.Pi)
		out, err := s.Run(map[string]*Tensor{
			"h": NewFloat16([]int64{5}, h),
			"b": NewBFloat16([]int64{5}, b),
			"x": NewFloat32([]int64{5}, xs),
		})
		if err != nil {
			t.Fatal(err)
		}
		hf := make([]float32, len(h))
		for i, v := range h {
			hf[i] = v.Float32()
		}
		bf := make([]float32, len(b))
		for i, v := range b {
			bf[i] = v.Float32()
		}
		want := map[string]*Tensor{
			"h_id":  NewFloat16([]int64{5}, h),
			"b_id":  NewBFloat16([]int64{5}, b),
			"h_f32": NewFloat32([]int64{5}, hf), // ORT's conversion agrees with F16.Float32
			"b_f32": NewFloat32([]int64{5}, bf),
			"x_h":   NewFloat16([]int64{5}, halves(xs...)), // and with F16From
			"x_b":   NewBFloat16([]int64{5}, bhalves(xs...)),
		}
		for name, w := range want {
			g := out[name]
			if g == nil || g.DType() != w.DType() || !reflect.DeepEqual(g.Shape, w.Shape) || !reflect.DeepEqual(g.Data, w.Data) {
				t.Errorf("%s = %v %v, want %s %v", name, g, dataOf(g), w, w.Data)
			}
		}
	})
}

func dataOf(t *Tensor) any {
	if t == nil {
		return nil
	}
	return t.Data
}

func TestHalfErrors(t *testing.T) {
	s := openModel(t, "float16", Options{Backend: BackendORT})
	two := map[string]*Tensor{"h": NewFloat16([]int64{2}, halves(1, 2))}
	tests := []struct {
		name   string
		s      *Session
		inputs map[string]*Tensor
		want   []string
	}{
		{"output shape unknown before running", openModel(t, "half_free", Options{Backend: BackendORT}), two,
			[]string{`output "hh" is declared float16[m]`, "must be preallocated with their exact shape"}},
		{"output shape misdeclared", openModel(t, "half_misdeclared", Options{Backend: BackendORT}), two,
			[]string{"Concat", `preallocated from their declared symbolic shapes: "hh" as float16[2]`}},
		{"bfloat16 for float16", s, map[string]*Tensor{"h": NewBFloat16([]int64{2}, bhalves(1, 2))},
			[]string{`input "h": got bfloat16[2], model expects float16[2]`, "element type bfloat16, want float16"}},
		{"too few halves", s, map[string]*Tensor{"h": NewFloat16([]int64{2}, halves(1))},
			[]string{`input "h": got float16[2]`, "shape holds 2 elements but data has 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Run(tc.inputs)
			if err == nil {
				t.Fatal("Run succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		t    *Tensor
		want string
	}{
		{"rank 0", Scalar(F16From(1)), "rank-0 float16 tensors are not supported"},
		{"empty", NewBFloat16([]int64{0, 3}, nil), "empty bfloat16 tensors (shape [0,3]) are not supported"},
	} {
		v, err := NewValue(tc.t)
		if err == nil {
			v.Destroy()
			t.Errorf("%s: NewValue succeeded", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.want)
		}
	}
}

// TestHalfRunValues: onnxruntime_go v1.27.0 cannot return a float16 output
// that ORT allocates (it copies half the bytes and then fails); a
// preallocated one reads back whole, and FromValue refuses a custom-data
// tensor whose byte count does not fit its shape.
func TestHalfRunValues(t *testing.T) {
	s := openModel(t, "float16", Options{Backend: BackendORT})
	in, err := NewValue(NewFloat16([]int64{2}, halves(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Destroy()
	outs := []ort.Value{nil}
	if err := s.RunValues([]ort.Value{in}, outs); err == nil || !strings.Contains(err.Error(), "not enough space: expected 4, got 2") {
		t.Errorf("ORT-allocated float16 output: RunValues error = %v (has onnxruntime_go's float16 copy been fixed?)", err)
	}
	odd, err := ort.NewCustomDataTensor(ort.NewShape(1), []byte{0, 0x3c, 0}, ort.TensorElementDataTypeFloat16)
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Destroy()
	if _, err := FromValue(odd); err == nil || !strings.Contains(err.Error(), "float16 tensor [1] holds 3 bytes, want 2") {
		t.Errorf("FromValue of a 3-byte float16[1]: error = %v", err)
	}
	pre, err := NewValue(NewFloat16([]int64{2}, make([]F16, 2)))
	if err != nil {
		t.Fatal(err)
	}
	defer pre.Destroy()
	if err := s.RunValues([]ort.Value{in}, []ort.Value{pre}); err != nil {
		t.Fatal(err)
	}
	got, err := FromValue(pre)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := got.AsFloat32(); !reflect.DeepEqual(f, []float32{1, 2}) {
		t.Errorf("preallocated output = %v", f)
	}
}

func TestHalfTensorHelpers(t *testing.T) {
	h := NewFloat16([]int64{2}, halves(1, -0.5))
	b := NewBFloat16([]int64{1}, bhalves(3))
	if h.String() != "float16[2]" || h.DType() != Float16 || h.Len() != 2 {
		t.Errorf("float16 tensor: %s %v %d", h, h.DType(), h.Len())
	}
	if b.String() != "bfloat16[1]" || b.DType() != BFloat16 || b.Len() != 1 {
		t.Errorf("bfloat16 tensor: %s %v %d", b, b.DType(), b.Len())
	}
	for _, tc := range []struct {
		t    *Tensor
		want []float32
	}{
		{h, []float32{1, -0.5}},
		{b, []float32{3}},
		{NewFloat64([]int64{1}, []float64{0.25}), []float32{0.25}},
		{NewFloat32([]int64{1}, []float32{7}), []float32{7}},
	} {
		got, err := tc.t.AsFloat32()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s.AsFloat32() = %v, %v; want %v", tc.t, got, err, tc.want)
		}
	}
	if _, err := NewInt64([]int64{1}, []int64{1}).AsFloat32(); err == nil || !strings.Contains(err.Error(), "not a floating-point tensor") {
		t.Errorf("int64 AsFloat32 error = %v", err)
	}
	if _, err := h.BFloat16s(); err == nil {
		t.Error("BFloat16s on a float16 tensor: no error")
	}
	if d, err := b.BFloat16s(); err != nil || len(d) != 1 {
		t.Errorf("BFloat16s = %v, %v", d, err)
	}
	if d, err := h.Float16s(); err != nil || len(d) != 2 {
		t.Errorf("Float16s = %v, %v", d, err)
	}
}
