package conformance

import (
	"fmt"
	"math"
	"slices"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/onnxrun"
)

// compareDatum compares a runtime output with the expected one: a tensor
// (see compareTensor), or a sequence of the same length whose tensors
// compare equal one by one. It returns the largest absolute float error.
func compareDatum(got onnxrun.Datum, want namedTensor, opt Options) (float64, error) {
	if !want.isSeq {
		g, ok := got.(*onnxrun.Tensor)
		if !ok {
			return 0, fmt.Errorf("got %s, want a tensor", got)
		}
		return compareTensor(g, want.t, opt)
	}
	g, ok := got.(*onnxrun.Sequence)
	if !ok {
		return 0, fmt.Errorf("got %s, want a sequence of %d tensors", got, len(want.seq))
	}
	if g.Len() != len(want.seq) {
		return 0, fmt.Errorf("sequence of %d tensors, want %d", g.Len(), len(want.seq))
	}
	maxErr := 0.0
	for i, w := range want.seq {
		e, err := compareTensor(g.Tensors[i], w, opt)
		maxErr = math.Max(maxErr, e)
		if err != nil {
			return maxErr, fmt.Errorf("sequence element %d: %w", i, err)
		}
	}
	return maxErr, nil
}

// compareTensor compares a runtime output with the expected tensor: same
// element type and shape, floats within tolerance (NaN equal to NaN, as
// numpy.testing.assert_allclose; float16 and bfloat16 converted to float32
// first, with the same tolerances), everything else exactly. It returns the
// largest absolute float error.
func compareTensor(got *onnxrun.Tensor, want *builder.Tensor, opt Options) (float64, error) {
	w, err := onnxrun.FromBuilder(want)
	if err != nil {
		return 0, err
	}
	if got.DType() != w.DType() {
		return 0, fmt.Errorf("element type %v, want %v", got.DType(), w.DType())
	}
	if !slices.Equal(got.Shape, w.Shape) {
		return 0, fmt.Errorf("shape %v, want %v", got.Shape, w.Shape)
	}
	tol := compare.Options{RTol: opt.RTol, ATol: opt.ATol, EqualNaN: true}
	var r compare.Result
	switch g := got.Data.(type) {
	case []float32:
		r = compare.Float32(g, w.Data.([]float32), w.Shape, tol)
	case []float64:
		r = compare.Float64(g, w.Data.([]float64), w.Shape, tol)
	case []int8:
		r = compare.Exact(g, w.Data.([]int8), w.Shape)
	case []uint8:
		r = compare.Exact(g, w.Data.([]uint8), w.Shape)
	case []int16:
		r = compare.Exact(g, w.Data.([]int16), w.Shape)
	case []uint16:
		r = compare.Exact(g, w.Data.([]uint16), w.Shape)
	case []int32:
		r = compare.Exact(g, w.Data.([]int32), w.Shape)
	case []uint32:
		r = compare.Exact(g, w.Data.([]uint32), w.Shape)
	case []int64:
		r = compare.Exact(g, w.Data.([]int64), w.Shape)
	case []uint64:
		r = compare.Exact(g, w.Data.([]uint64), w.Shape)
	case []bool:
		r = compare.Exact(g, w.Data.([]bool), w.Shape)
	case []string:
		r = compare.Exact(g, w.Data.([]string), w.Shape)
	case []onnxrun.F16, []onnxrun.BF16:
		gf, err := got.AsFloat32()
		if err != nil {
			return 0, err
		}
		wf, err := w.AsFloat32()
		if err != nil {
			return 0, err
		}
		r = compare.Float32(gf, wf, w.Shape, tol)
	default:
		return 0, fmt.Errorf("cannot compare %T outputs", got.Data)
	}
	if r.Err != nil {
		return r.MaxAbsErr, r.Err
	}
	if !r.OK {
		return r.MaxAbsErr, fmt.Errorf("%s", r.String())
	}
	return r.MaxAbsErr, nil
}
