package onnxrun

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
)

func TestFromBuilder(t *testing.T) {
	le := func(b ...byte) []byte { return b }
	cases := []struct {
		dt   builder.DataType
		raw  []byte
		want any
	}{
		{builder.Float, le(0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0), []float32{1, -2}},
		{builder.Double, le(0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f), []float64{1, math.NaN()}},
		{builder.Int8, le(0xff, 7), []int8{-1, 7}},
		{builder.Uint8, le(0xff, 7), []uint8{255, 7}},
		{builder.Int16, le(0xfe, 0xff, 1, 1), []int16{-2, 257}},
		{builder.Uint16, le(0xfe, 0xff, 1, 1), []uint16{65534, 257}},
		{builder.Int32, le(0xff, 0xff, 0xff, 0xff, 2, 0, 0, 1), []int32{-1, 1<<24 + 2}},
		{builder.Uint32, le(0xff, 0xff, 0xff, 0xff, 2, 0, 0, 1), []uint32{math.MaxUint32, 1<<24 + 2}},
		{builder.Int64, le(0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0x80), []int64{-3, math.MinInt64 + 1}},
		{builder.Uint64, le(3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x80), []uint64{3, 1<<63 + 1}},
		{builder.Bool, le(0, 2), []bool{false, true}},
		{builder.Float16, le(0, 0x3c, 0, 0xc0), []F16{0x3c00, 0xc000}},
		{builder.BFloat16, le(0x80, 0x3f, 0, 0xc0), []BF16{0x3f80, 0xc000}},
	}
	for _, c := range cases {
		bt := &builder.Tensor{Name: "t", DType: c.dt, Dims: []int64{2, 1}, Raw: c.raw}
		got, err := FromBuilder(bt)
		if err != nil {
			t.Errorf("%v: %v", c.dt, err)
			continue
		}
		if got.DType() != DType(c.dt) || !reflect.DeepEqual(got.Shape, []int64{2, 1}) {
			t.Errorf("%v: got %s, want %v[2,1]", c.dt, got, c.dt)
		}
		// NaN != NaN: compare float64 bits.
		if f, ok := got.Data.([]float64); ok {
			if w := c.want.([]float64); math.Float64bits(f[0]) != math.Float64bits(w[0]) || !math.IsNaN(f[1]) {
				t.Errorf("%v: data %v, want %v", c.dt, f, w)
			}
			continue
		}
		if !reflect.DeepEqual(got.Data, c.want) {
			t.Errorf("%v: data %v, want %v", c.dt, got.Data, c.want)
		}
		bt.Dims[0] = 7 // the conversion copied the shape
		if got.Shape[0] != 2 {
			t.Errorf("%v: the shape is shared with the builder tensor", c.dt)
		}
	}
	s, err := FromBuilder(&builder.Tensor{DType: builder.String, Dims: []int64{2}, Strings: [][]byte{[]byte("ab"), nil}})
	if err != nil || !reflect.DeepEqual(s.Data, []string{"ab", ""}) {
		t.Errorf("strings: %v, %v", s, err)
	}
	sc, err := FromBuilder(builder.ScalarFloat(2.5))
	if err != nil || len(sc.Shape) != 0 || !reflect.DeepEqual(sc.Data, []float32{2.5}) {
		t.Errorf("scalar: %v, %v", sc, err)
	}
	for _, bad := range []struct {
		t    *builder.Tensor
		want string
	}{
		{&builder.Tensor{Name: "c", DType: builder.Complex64, Dims: []int64{1}, Raw: make([]byte, 8)}, `tensor "c": complex64 tensors cannot be held`},
		{&builder.Tensor{Name: "short", DType: builder.Float, Dims: []int64{3}, Raw: make([]byte, 8)}, `tensor "short": 8 bytes of float32 data for shape [3] (want 12)`},
		{nil, "nil builder tensor"},
	} {
		if _, err := FromBuilder(bad.t); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("err = %v, want it to contain %q", err, bad.want)
		}
	}
}
