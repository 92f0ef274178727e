package compare

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestFloat64(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name       string
		got, want  []float64
		shape      []int64
		opt        Options
		ok         bool
		mismatches int
		nanMis     int
		infMis     int
		maxAbs     float64
		maxRel     float64
		worst      []int64
	}{
		{name: "identical", got: []float64{1, 2, 3}, want: []float64{1, 2, 3},
			opt: Options{}, ok: true, worst: []int64{0}},
		{name: "atol boundary exactly met", got: []float64{1.5}, want: []float64{1},
			opt: Options{ATol: 0.5}, ok: true, maxAbs: 0.5, maxRel: 0.5, worst: []int64{0}},
		{name: "atol boundary just exceeded", got: []float64{1.5000001}, want: []float64{1},
			opt: Options{ATol: 0.5}, ok: false, mismatches: 1, maxAbs: sub(1.5000001, 1), maxRel: sub(1.5000001, 1), worst: []int64{0}},
		{name: "rtol uses |want| not |got|", got: []float64{3, 2}, want: []float64{2, 3},
			// |3-2| <= 0.5*2 passes; |2-3| <= 0.5*3 passes; now swap the reference role:
			opt: Options{RTol: 0.5}, ok: true, maxAbs: 1, maxRel: 0.5, worst: []int64{0}},
		{name: "rtol asymmetric failure", got: []float64{4}, want: []float64{2},
			// |4-2| = 2 > 0.5*2 = 1, although 2 <= 0.5*4 would pass with |got|.
			opt: Options{RTol: 0.5}, ok: false, mismatches: 1, maxAbs: 2, maxRel: 1, worst: []int64{0}},
		{name: "rtol plus atol boundary", got: []float64{-10.25}, want: []float64{-10},
			opt: Options{RTol: 0.02, ATol: 0.05}, ok: true, maxAbs: 0.25, maxRel: 0.025, worst: []int64{0}},
		{name: "NaN vs NaN without EqualNaN", got: []float64{nan, 1}, want: []float64{nan, 1},
			opt: Options{ATol: 1}, ok: false, mismatches: 1, nanMis: 1, worst: []int64{0}},
		{name: "NaN vs NaN with EqualNaN", got: []float64{nan, 1}, want: []float64{nan, 1},
			opt: Options{ATol: 1, EqualNaN: true}, ok: true, worst: []int64{0}},
		{name: "NaN vs number", got: []float64{1, nan}, want: []float64{1, 2},
			opt: Options{ATol: 100, EqualNaN: true}, ok: false, mismatches: 1, nanMis: 1, worst: []int64{1}},
		{name: "number vs NaN", got: []float64{1, 2}, want: []float64{1, nan},
			opt: Options{ATol: 100, EqualNaN: true}, ok: false, mismatches: 1, nanMis: 1, worst: []int64{1}},
		{name: "same Inf matches", got: []float64{inf, -inf}, want: []float64{inf, -inf},
			opt: Options{}, ok: true, worst: []int64{0}},
		{name: "Inf sign mismatch", got: []float64{0, inf}, want: []float64{0, -inf},
			opt: Options{ATol: 1e300}, ok: false, mismatches: 1, infMis: 1, worst: []int64{1}},
		{name: "Inf vs finite", got: []float64{1e308, 5}, want: []float64{inf, 5},
			opt: Options{RTol: 1}, ok: false, mismatches: 1, infMis: 1, worst: []int64{0}},
		{name: "zero want: rel skipped, atol decides", got: []float64{1e-6, 0}, want: []float64{0, 0},
			opt: Options{RTol: 1e-3, ATol: 1e-5}, ok: true, maxAbs: 1e-6, maxRel: 0, worst: []int64{0}},
		{name: "zero tolerance, tiny difference", got: []float64{1, 2}, want: []float64{1, 2.0000000001},
			opt: Options{}, ok: false, mismatches: 1, maxAbs: sub(2.0000000001, 2), maxRel: sub(2.0000000001, 2) / 2.0000000001, worst: []int64{1}},
		{name: "worst in 3-D is the one furthest outside tolerance",
			// shape 2x3x4; flat 17 = [1 1 1] is off by 0.5 on want 100 (within
			// rtol), flat 22 = [1 2 2] off by 0.01 on want 0 (outside).
			got:   withChanges(24, map[int]float64{17: 100.5, 22: 0.01}),
			want:  withChanges(24, map[int]float64{17: 100}),
			shape: []int64{2, 3, 4}, opt: Options{RTol: 0.01, ATol: 1e-3},
			ok: false, mismatches: 1, maxAbs: 0.5, maxRel: 0.005, worst: []int64{1, 2, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Float64(tc.got, tc.want, tc.shape, tc.opt)
			if r.Err != nil {
				t.Fatalf("unexpected error: %v", r.Err)
			}
			if r.OK != tc.ok || r.Mismatches != tc.mismatches || r.NaNMismatches != tc.nanMis || r.InfMismatches != tc.infMis {
				t.Errorf("OK=%v mismatches=%d nan=%d inf=%d, want OK=%v mismatches=%d nan=%d inf=%d (%s)",
					r.OK, r.Mismatches, r.NaNMismatches, r.InfMismatches, tc.ok, tc.mismatches, tc.nanMis, tc.infMis, r)
			}
			if r.MaxAbsErr != tc.maxAbs || r.MaxRelErr != tc.maxRel {
				t.Errorf("MaxAbsErr=%v MaxRelErr=%v, want %v %v", r.MaxAbsErr, r.MaxRelErr, tc.maxAbs, tc.maxRel)
			}
			if !reflect.DeepEqual(r.WorstIndex, tc.worst) {
				t.Errorf("WorstIndex=%v, want %v", r.WorstIndex, tc.worst)
			}
			if r.Count != len(tc.want) {
				t.Errorf("Count=%d, want %d", r.Count, len(tc.want))
			}
		})
	}
}

// sub subtracts at run time in float64 (a constant expression would be exact).
func sub(a, b float64) float64 { return a - b }

// withChanges returns n zeros with the given positions set.
func withChanges(n int, set map[int]float64) []float64 {
	s := make([]float64, n)
	for i, v := range set {
		s[i] = v
	}
	return s
}

func TestFloat32WorstValues(t *testing.T) {
	got := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}
	want := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.61}
	r := Float32(got, want, []int64{3, 2}, Float32Tol)
	if r.OK || r.Mismatches != 1 {
		t.Fatalf("OK=%v Mismatches=%d, want false 1", r.OK, r.Mismatches)
	}
	if r.WorstGot != float32(0.6) || r.WorstWant != float32(0.61) {
		t.Errorf("worst got/want = %v/%v, want 0.6/0.61", r.WorstGot, r.WorstWant)
	}
	if !reflect.DeepEqual(r.WorstIndex, []int64{2, 1}) || r.WorstFlat != 5 {
		t.Errorf("worst index %v (flat %d), want [2 1] (5)", r.WorstIndex, r.WorstFlat)
	}
	// float32(0.61)-float32(0.6) computed in float64.
	if wantAbs := float64(float32(0.61)) - float64(float32(0.6)); r.MaxAbsErr != wantAbs {
		t.Errorf("MaxAbsErr %v, want %v", r.MaxAbsErr, wantAbs)
	}
	s := r.String()
	for _, w := range []string{"max abs 0.01", "worst at [2 1]", "got 0.6, want 0.61", "1 of 6 outside rtol=1.3e-06 atol=1e-05"} {
		if !strings.Contains(s, w) {
			t.Errorf("String() = %q, lacks %q", s, w)
		}
	}
}

func TestNotComparable(t *testing.T) {
	tests := []struct {
		name  string
		got   []float32
		want  []float32
		shape []int64
		msg   string
	}{
		{"length mismatch", []float32{1, 2}, []float32{1, 2, 3}, nil, "length mismatch: got 2 elements, want 3"},
		{"shape disagrees with data", []float32{1, 2, 3}, []float32{1, 2, 3}, []int64{2, 2}, "shape [2 2] holds 4 elements, but the data has 3"},
		{"negative dim", []float32{1}, []float32{1}, []int64{-1}, "negative dimension"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Float32(tc.got, tc.want, tc.shape, Float32Tol)
			if r.OK || r.Err == nil || !strings.Contains(r.Err.Error(), tc.msg) {
				t.Fatalf("OK=%v Err=%v, want not OK with %q", r.OK, r.Err, tc.msg)
			}
			if s := r.String(); !strings.HasPrefix(s, "not comparable: ") {
				t.Errorf("String() = %q", s)
			}
		})
	}
	if r := Exact([]int64{1}, []int64{1, 2}, nil); r.OK || r.Err == nil {
		t.Errorf("Exact length mismatch: OK=%v Err=%v", r.OK, r.Err)
	}
}

func TestEmpty(t *testing.T) {
	r := Float32(nil, nil, []int64{0, 3}, Float32Tol)
	if !r.OK || r.Err != nil || r.Count != 0 || r.WorstFlat != -1 || r.WorstIndex != nil {
		t.Fatalf("empty: %+v", r)
	}
	if s := r.String(); s != "max abs 0 (rel 0), 0 of 0 outside rtol=1.3e-06 atol=1e-05" {
		t.Errorf("String() = %q", s)
	}
}

func TestExact(t *testing.T) {
	ints := Exact([]int64{1, 2, 3, 9, 5, 7}, []int64{1, 2, 3, 4, 5, 6}, []int64{2, 3})
	if ints.OK || ints.Mismatches != 2 || !reflect.DeepEqual(ints.WorstIndex, []int64{1, 0}) ||
		ints.WorstGot != int64(9) || ints.WorstWant != int64(4) {
		t.Errorf("ints: %+v", ints)
	}
	if s := ints.String(); s != "2 of 6 differ, first at [1 0] (got 9, want 4)" {
		t.Errorf("String() = %q", s)
	}
	bools := Exact([]bool{true, false}, []bool{true, false}, nil)
	if !bools.OK || bools.String() != "all 2 equal" {
		t.Errorf("bools: %+v %q", bools, bools.String())
	}
	strs := Exact([]string{"a", "b"}, []string{"a", "c"}, nil)
	if strs.OK || strs.WorstGot != "b" || strs.WorstWant != "c" {
		t.Errorf("strings: %+v", strs)
	}
}

func TestClose(t *testing.T) {
	tests := []struct {
		got, want float64
		opt       Options
		ok        bool
	}{
		{1.0, 1.0, Options{}, true},
		{1.1, 1.0, Options{ATol: 0.1}, false}, // 1.1-1.0 = 0.10000000000000009 in float64
		{1.25, 1.0, Options{ATol: 0.25}, true},
		{math.NaN(), math.NaN(), Options{EqualNaN: true}, true},
		{math.NaN(), math.NaN(), Options{}, false},
		{math.Inf(-1), math.Inf(-1), Options{}, true},
	}
	for _, tc := range tests {
		if got := Close(tc.got, tc.want, tc.opt); got != tc.ok {
			t.Errorf("Close(%v, %v, %+v) = %v, want %v", tc.got, tc.want, tc.opt, got, tc.ok)
		}
	}
}

func ExampleFloat32() {
	got := []float32{0.5, 0.25, 0.1234, 1}
	want := []float32{0.5, 0.25, 0.1235, 1}
	r := Float32(got, want, []int64{2, 2}, Options{RTol: 1e-3, ATol: 1e-5})
	fmt.Println(r.OK)
	fmt.Println(r)
	// Output:
	// true
	// max abs 0.0001 (rel 0.00081), worst at [1 0] (got 0.1234, want 0.1235), 0 of 4 outside rtol=0.001 atol=1e-05
}

// TestSlack: per-element slack widens only its own element's bound, and a
// slack of the wrong length makes the tensors not comparable.
func TestSlack(t *testing.T) {
	want := []float32{1, 2, 3}
	got := []float32{1.00002, 2.00002, 3}
	opt := Options{ATol: 1e-5}
	if r := Float32(got, want, nil, opt); r.OK || r.Mismatches != 2 {
		t.Fatalf("without slack: %v", r)
	}
	opt.Slack = []float32{2e-5, 0, 0}
	r := Float32(got, want, nil, opt)
	if r.OK || r.Mismatches != 1 || r.WorstFlat != 1 || !strings.Contains(r.String(), "the reference's own rounding") {
		t.Fatalf("slack on the first element: %v (worst %d)", r, r.WorstFlat)
	}
	opt.Slack = []float32{2e-5, 1.5e-5, 0}
	if r := Float32(got, want, nil, opt); !r.OK {
		t.Fatalf("slack on both: %v", r)
	}
	opt.Slack = []float32{1}
	if r := Float32(got, want, nil, opt); r.OK || r.Err == nil {
		t.Fatalf("short slack: %v", r)
	}
}
