// Package compare compares computed tensors against reference tensors with
// numpy allclose semantics: an element passes when
//
//	|got - want| <= ATol + RTol*|want|
//
// where want is the expected (reference) value. The comparison is done in
// float64 whatever the element type. Results carry enough detail (worst
// element, its multi-dimensional index, error maxima, NaN/Inf mismatch
// counts) to print a one-line verdict in a conformance table.
package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Options sets the tolerances of a floating-point comparison.
type Options struct {
	// RTol is the relative tolerance, applied to |want|.
	RTol float64
	// ATol is the absolute tolerance.
	ATol float64
	// EqualNaN makes a NaN in got match a NaN in want (numpy's equal_nan).
	// When false, NaN never matches anything, not even NaN.
	EqualNaN bool
	// Slack, when not nil, widens each element's allowed error by its
	// entry: |got - want| <= ATol + RTol*|want| + Slack[i]. It holds the
	// reference's own measured rounding error per element (how far want
	// is from the exact result), so that a got closer to the exact result
	// than the tolerance is not failed for want's error. Its length must
	// be the data's.
	Slack []float32
}

// Float32Tol is the default tolerance for float32 results, the one
// torch.testing.assert_close uses for float32: rtol=1.3e-6, atol=1e-5.
var Float32Tol = Options{RTol: 1.3e-6, ATol: 1e-5}

// Float64Tol is the default tolerance for float64 results, the one
// torch.testing.assert_close uses for float64: rtol=1e-7, atol=1e-7.
var Float64Tol = Options{RTol: 1e-7, ATol: 1e-7}

// Result is the outcome of one tensor comparison.
type Result struct {
	// OK is true when every element is within tolerance (or equal, for
	// Exact) and the inputs were comparable (Err is nil).
	OK bool
	// Err is set when the tensors could not be compared at all: lengths
	// differ, or the shape does not match the data length. OK is then false.
	Err error
	// Exact is true for results of Exact, where tolerances do not apply.
	Exact bool
	// Opt holds the tolerances used (zero for Exact).
	Opt Options
	// Shape is the shape used to turn flat positions into indices.
	Shape []int64
	// Count is the number of elements compared.
	Count int
	// Mismatches is the number of elements outside tolerance, NaN and Inf
	// mismatches included.
	Mismatches int
	// NaNMismatches counts elements where exactly one side is NaN, or both
	// are NaN and EqualNaN is false.
	NaNMismatches int
	// InfMismatches counts elements where one side is infinite and the
	// other is not the same infinity (finite, or the opposite sign).
	InfMismatches int
	// MaxAbsErr is the largest |got-want| over elements where both sides
	// are finite.
	MaxAbsErr float64
	// MaxRelErr is the largest |got-want|/|want| over elements where both
	// sides are finite and want is not zero (zeros would make it Inf and
	// hide everything else; ATol covers them).
	MaxRelErr float64
	// WorstFlat is the flat position of the worst element, -1 when there
	// are no elements. The worst element is the one furthest outside its
	// tolerance, |got-want| / (ATol + RTol*|want|); a NaN or Inf mismatch
	// counts as infinitely far, the first one found wins. For Exact it is
	// the first mismatch (or 0 when all match).
	WorstFlat int
	// WorstIndex is WorstFlat as a multi-dimensional index into Shape.
	WorstIndex []int64
	// WorstGot and WorstWant are the worst element's values, in the
	// element type of the compared slices (float32 for Float32, ...).
	WorstGot, WorstWant any
}

// Float32 compares got against want (the reference) elementwise with the
// allclose rule. shape gives the tensor shape for reporting indices; nil means
// one dimension of len(want).
func Float32(got, want []float32, shape []int64, opt Options) Result {
	return floats(got, want, shape, opt)
}

// Float64 is Float32 for float64 data.
func Float64(got, want []float64, shape []int64, opt Options) Result {
	return floats(got, want, shape, opt)
}

// Exact compares got against want element by element with ==, for integer,
// bool and string tensors. (For floats use Float32/Float64: == never matches
// NaN.) shape is as for Float32.
func Exact[T comparable](got, want []T, shape []int64) Result {
	r, ok := start(len(got), len(want), shape)
	r.Exact = true
	if !ok {
		return r
	}
	for i := range want {
		if got[i] != want[i] {
			if r.Mismatches == 0 {
				r.WorstFlat = i
			}
			r.Mismatches++
		}
	}
	if r.Count > 0 {
		if r.WorstFlat < 0 {
			r.WorstFlat = 0
		}
		r.WorstGot, r.WorstWant = got[r.WorstFlat], want[r.WorstFlat]
		r.WorstIndex = unflatten(r.WorstFlat, r.Shape)
	}
	r.OK = r.Mismatches == 0
	return r
}

// Close reports whether one pair of values is within tolerance, with the
// same NaN and Inf rules as Float64.
func Close(got, want float64, opt Options) bool {
	_, bad := elem(got, want, opt)
	return bad == 0
}

// start checks lengths and shape, and fills the fields every result has.
func start(nGot, nWant int, shape []int64) (Result, bool) {
	r := Result{WorstFlat: -1}
	if shape == nil {
		shape = []int64{int64(nWant)}
	}
	r.Shape = append([]int64{}, shape...)
	if nGot != nWant {
		r.Err = fmt.Errorf("length mismatch: got %d elements, want %d", nGot, nWant)
		return r, false
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			r.Err = fmt.Errorf("shape %v has a negative dimension", shape)
			return r, false
		}
		n *= d
	}
	if n != int64(nWant) {
		r.Err = fmt.Errorf("shape %v holds %d elements, but the data has %d", shape, n, nWant)
		return r, false
	}
	r.Count = nWant
	return r, true
}

// Kinds of element failure returned by elem.
const (
	elemNaN = 1 + iota
	elemInf
	elemTol
)

// elem returns how far the pair is outside tolerance (the ratio of the error
// to the allowed error; +Inf for NaN/Inf mismatches) and the kind of failure,
// 0 when the pair passes.
func elem(g, w float64, opt Options) (float64, int) {
	return elemSlack(g, w, opt, 0)
}

// elemSlack is elem with the allowed error widened by slack.
func elemSlack(g, w float64, opt Options, slack float64) (float64, int) {
	gn, wn := math.IsNaN(g), math.IsNaN(w)
	if gn || wn {
		if gn && wn && opt.EqualNaN {
			return 0, 0
		}
		return math.Inf(1), elemNaN
	}
	gi, wi := math.IsInf(g, 0), math.IsInf(w, 0)
	if gi || wi {
		if g == w {
			return 0, 0
		}
		return math.Inf(1), elemInf
	}
	d := math.Abs(g - w)
	allowed := opt.ATol + opt.RTol*math.Abs(w) + slack
	var ratio float64
	switch {
	case d == 0:
		ratio = 0
	case allowed == 0:
		ratio = math.Inf(1)
	default:
		ratio = d / allowed
	}
	if d <= allowed {
		return ratio, 0
	}
	return ratio, elemTol
}

func floats[T float32 | float64](got, want []T, shape []int64, opt Options) Result {
	r, ok := start(len(got), len(want), shape)
	r.Opt = opt
	if !ok {
		return r
	}
	if opt.Slack != nil && len(opt.Slack) != len(want) {
		r.Err = fmt.Errorf("%d slack values for %d elements", len(opt.Slack), len(want))
		return r
	}
	worst := -1.0
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		var slack float64
		if opt.Slack != nil {
			slack = float64(opt.Slack[i])
		}
		ratio, bad := elemSlack(g, w, opt, slack)
		switch bad {
		case elemNaN:
			r.NaNMismatches++
		case elemInf:
			r.InfMismatches++
		}
		if bad != 0 {
			r.Mismatches++
		}
		if finite(g) && finite(w) {
			d := math.Abs(g - w)
			if d > r.MaxAbsErr {
				r.MaxAbsErr = d
			}
			if w != 0 {
				if rel := d / math.Abs(w); rel > r.MaxRelErr {
					r.MaxRelErr = rel
				}
			}
		}
		if ratio > worst {
			worst = ratio
			r.WorstFlat = i
		}
	}
	if r.WorstFlat >= 0 {
		r.WorstGot, r.WorstWant = got[r.WorstFlat], want[r.WorstFlat]
		r.WorstIndex = unflatten(r.WorstFlat, r.Shape)
	}
	r.OK = r.Mismatches == 0
	return r
}

// finite reports whether f is neither NaN nor infinite.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// unflatten turns a row-major flat position into an index into shape.
func unflatten(flat int, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	f := int64(flat)
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = f % shape[d]
			f /= shape[d]
		}
	}
	return idx
}

// String gives a one-line verdict, for example
//
//	max abs 3.1e-07 (rel 2.5e-06), worst at [0 2 5] (got 0.1234, want 0.1235), 0 of 120 outside rtol=1.3e-06 atol=1e-05
//
// NaN and Inf mismatches are appended when there are any; an Exact result
// reads "2 of 6 differ, first at [1 0] (got 3, want 4)".
func (r Result) String() string {
	if r.Err != nil {
		return "not comparable: " + r.Err.Error()
	}
	idx := formatIndex(r.WorstIndex)
	if r.Exact {
		if r.Mismatches == 0 {
			return fmt.Sprintf("all %d equal", r.Count)
		}
		return fmt.Sprintf("%d of %d differ, first at %s (got %v, want %v)",
			r.Mismatches, r.Count, idx, r.WorstGot, r.WorstWant)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "max abs %s (rel %s)", num(r.MaxAbsErr), num(r.MaxRelErr))
	if r.WorstFlat >= 0 {
		fmt.Fprintf(&b, ", worst at %s (got %v, want %v)", idx, r.WorstGot, r.WorstWant)
	}
	fmt.Fprintf(&b, ", %d of %d outside rtol=%s atol=%s", r.Mismatches, r.Count,
		num(r.Opt.RTol), num(r.Opt.ATol))
	if r.Opt.Slack != nil {
		b.WriteString(" + the reference's own rounding")
	}
	if r.NaNMismatches > 0 {
		fmt.Fprintf(&b, ", %d NaN mismatches", r.NaNMismatches)
	}
	if r.InfMismatches > 0 {
		fmt.Fprintf(&b, ", %d Inf mismatches", r.InfMismatches)
	}
	return b.String()
}

// num formats an error or tolerance compactly: 0, 3.1e-07, 0.25.
func num(f float64) string {
	if f == 0 {
		return "0"
	}
	a := math.Abs(f)
	if a < 1e-3 || a >= 1e4 {
		return strconv.FormatFloat(f, 'g', 2, 64)
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}

func formatIndex(idx []int64) string {
	parts := make([]string, len(idx))
	for i, v := range idx {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
