package builder

import (
	"math"
	"strings"
	"testing"
)

// TestValidateRefusesOverflowingShapes: shapes whose element count or byte
// size does not fit in int64 used to wrap around (2^32 x 2^32 = 0 elements)
// and pass Validate with no data at all.
func TestValidateRefusesOverflowingShapes(t *testing.T) {
	cases := []struct {
		name string
		t    *Tensor
		want string
	}{
		{"count wraps to 0", &Tensor{Name: "w", DType: Float, Dims: []int64{1 << 32, 1 << 32}},
			`tensor "w": shape [4294967296 4294967296] has more than 9223372036854775807 elements`},
		{"count wraps negative", &Tensor{Name: "w", DType: Uint8, Dims: []int64{math.MaxInt64, 3}},
			"has more than 9223372036854775807 elements"},
		{"bytes wrap to 0", &Tensor{Name: "w", DType: Float, Dims: []int64{1 << 62}},
			`tensor "w": float32 [4611686018427387904] needs more than 9223372036854775807 bytes`},
		{"strings", &Tensor{Name: "s", DType: String, Dims: []int64{1 << 40, 1 << 40}},
			"has more than 9223372036854775807 elements"},
		{"negative", &Tensor{Name: "w", DType: Float, Dims: []int64{2, -3}}, `tensor "w": dimension 1 is negative (-3)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.t.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestElementCountAndByteSize(t *testing.T) {
	cases := []struct {
		dims         []int64
		count, bytes int64 // bytes as float32
		err          string
	}{
		{nil, 1, 4, ""},
		{[]int64{2, 3}, 6, 24, ""},
		{[]int64{0, math.MaxInt64, math.MaxInt64}, 0, 0, ""}, // a zero anywhere: empty, whatever the rest
		{[]int64{math.MaxInt64, math.MaxInt64, 0}, 0, 0, ""},
		{[]int64{math.MaxInt64}, math.MaxInt64, 0, "float32 [9223372036854775807] needs more than 9223372036854775807 bytes"},
		{[]int64{1 << 30, 1 << 30, 4}, 1 << 62, 0, "float32 [1073741824 1073741824 4] needs more than"},
		{[]int64{1 << 32, 1 << 31}, 0, 0, "shape [4294967296 2147483648] has more than 9223372036854775807 elements"},
		{[]int64{3, -1, 1 << 62}, 0, 0, "dimension 1 is negative (-1)"},
	}
	for _, c := range cases {
		n, err := ElementCount(c.dims)
		b, berr := ByteSize(Float, c.dims)
		switch {
		case c.err == "":
			if err != nil || berr != nil || n != c.count || b != c.bytes {
				t.Errorf("%v: count %d (%v), bytes %d (%v); want %d, %d", c.dims, n, err, b, berr, c.count, c.bytes)
			}
		case err == nil:
			if n != c.count || berr == nil || !strings.Contains(berr.Error(), c.err) {
				t.Errorf("%v: count %d, bytes error %v; want count %d and a bytes error containing %q", c.dims, n, berr, c.count, c.err)
			}
		default:
			if berr == nil || !strings.Contains(err.Error(), c.err) || NumElements(c.dims) != -1 {
				t.Errorf("%v: error %v (bytes: %v, NumElements %d), want one containing %q and NumElements -1", c.dims, err, berr, NumElements(c.dims), c.err)
			}
		}
	}
	if _, err := ByteSize(String, []int64{2}); err == nil || !strings.Contains(err.Error(), "string has no fixed size") {
		t.Errorf("ByteSize(String): %v", err)
	}
}

func TestWithFloat32At(t *testing.T) {
	orig := FloatTensor([]int64{3}, []float32{1, 2, 3})
	orig.Name = "bias"
	got, n, ok, err := orig.WithFloat32At(1, -5)
	if err != nil || !ok || n != 3 {
		t.Fatalf("WithFloat32At(1): %v %d %v", err, n, ok)
	}
	v, _ := got.Float32s()
	o, _ := orig.Float32s()
	if v[0] != 1 || v[1] != -5 || v[2] != 3 || o[1] != 2 || got.Name != "bias" {
		t.Errorf("copy %v (name %q), original %v", v, got.Name, o)
	}
	if _, n, ok, err := orig.WithFloat32At(3, 0); ok || err != nil || n != 3 {
		t.Errorf("index 3 of 3: ok %v, n %d, %v", ok, n, err)
	}
}
