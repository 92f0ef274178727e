package attention

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/attnx/attnx/builder"
)

// This file is the one place where weights change layout between PyTorch's
// checkpoint and the graphs: the recurrent layers' gate blocks, reordered
// once by FromStateDict, and the Linear weights some graphs take
// transposed or as vectors, laid out as a graph adds them.

// RNNLayer holds one recurrent layer's weights in ONNX's layout: W is
// [1, G*H, input], R is [1, G*H, H] and B is [1, 2*G*H] (input biases, then
// recurrent biases), with G = 4 gate blocks ordered i, o, f, c for LSTM and
// G = 3 ordered z, r, h for GRU.
type RNNLayer struct {
	W, R, B *builder.Tensor
}

// onnxGateOrder gives, for each of ONNX's gate blocks in order, the index
// of the same gate in PyTorch's weights.
//
// LSTM: PyTorch stacks i, f, g, o; ONNX i, o, f, c (c = g).
// GRU: PyTorch stacks r, z, n; ONNX z, r, h (h = n). PyTorch applies the
// reset gate after the recurrent product, n = tanh(W_in x + b_in + r *
// (W_hn h + b_hn)): ONNX GRU with linear_before_reset = 1.
func onnxGateOrder(c Cell) []int {
	if c == GRU {
		return []int{1, 0, 2}
	}
	return []int{0, 3, 1, 2}
}

// reorderGates appends to dst the float32 parameter p (G gate blocks of
// hidden rows of cols values each, in PyTorch's order) with its blocks in
// ONNX's order. The bytes are copied as they are, nothing decoded.
func reorderGates(dst, p []byte, c Cell, hidden, cols int) []byte {
	block := 4 * hidden * cols
	for _, src := range onnxGateOrder(c) {
		dst = append(dst, p[src*block:(src+1)*block]...)
	}
	return dst
}

// ConvertRNNLayer converts one PyTorch recurrent layer of the given cell
// and hidden size, float32 weight_ih [G*H, in], weight_hh [G*H, H], bias_ih
// and bias_hh [G*H], into ONNX's W, R and B (see RNNLayer). It is the one
// place where attnx repacks recurrent weights. The result does not share
// memory with its inputs.
func ConvertRNNLayer(cell Cell, hidden int, wih, whh, bih, bhh *builder.Tensor) (RNNLayer, error) {
	if _, err := ParseCell(string(cell)); err != nil {
		return RNNLayer{}, err
	}
	if hidden < 1 {
		return RNNLayer{}, fmt.Errorf("hidden size %d: must be at least 1", hidden)
	}
	G, H := int64(cell.gates()), int64(hidden)
	in := int64(-1)
	if wih != nil && len(wih.Dims) == 2 {
		in = wih.Dims[1]
	}
	for _, p := range []struct {
		name string
		t    *builder.Tensor
		dims []int64
	}{
		{"weight_ih", wih, []int64{G * H, in}},
		{"weight_hh", whh, []int64{G * H, H}},
		{"bias_ih", bih, []int64{G * H}},
		{"bias_hh", bhh, []int64{G * H}},
	} {
		if err := checkFloat(p.name, p.t, p.dims); err != nil {
			return RNNLayer{}, fmt.Errorf("%s layer: %w", cell, err)
		}
	}
	if in < 1 {
		return RNNLayer{}, fmt.Errorf("%s layer: weight_ih has %d input columns, expected at least 1", cell, in)
	}
	b := reorderGates(make([]byte, 0, 2*len(bih.Raw)), bih.Raw, cell, hidden, 1)
	b = reorderGates(b, bhh.Raw, cell, hidden, 1)
	return RNNLayer{
		W: &builder.Tensor{DType: builder.Float, Dims: []int64{1, G * H, in}, Raw: reorderGates(make([]byte, 0, len(wih.Raw)), wih.Raw, cell, hidden, int(in))},
		R: &builder.Tensor{DType: builder.Float, Dims: []int64{1, G * H, H}, Raw: reorderGates(make([]byte, 0, len(whh.Raw)), whh.Raw, cell, hidden, hidden)},
		B: &builder.Tensor{DType: builder.Float, Dims: []int64{1, 2 * G * H}, Raw: b},
	}, nil
}

// checkFloat checks that t is a float32 tensor of the given dims whose data
// has the size they imply.
func checkFloat(name string, t *builder.Tensor, dims []int64) error {
	if t == nil {
		return fmt.Errorf("%s is missing (expected float32 %v)", name, dims)
	}
	if t.DType != builder.Float {
		return fmt.Errorf("%s: dtype %v, expected float32", name, t.DType)
	}
	if !slices.Equal(t.Dims, dims) {
		return fmt.Errorf("%s: shape %v, expected %v", name, t.Dims, dims)
	}
	if n := builder.NumElements(dims); int64(len(t.Raw)) != 4*n {
		return fmt.Errorf("%s: %d bytes of float32 data for shape %v, expected %d", name, len(t.Raw), dims, 4*n)
	}
	return nil
}

// pack says how a PyTorch parameter is laid out as an initializer.
type pack int

const (
	// asIs keeps PyTorch's layout ([out, in] for a Linear's weight, which
	// Gemm takes with transB).
	asIs pack = iota
	// transposed turns a 2-D [out, in] weight into [in, out], for MatMul
	// over batched 3-D inputs.
	transposed
	// vector turns a [1, n] weight into a 1-D [n], so that MatMul([.., n],
	// [n]) gives the dot product without a trailing axis to squeeze.
	vector
)

// suffix is what the packing adds to the initializer's name.
func (p pack) suffix() string {
	switch p {
	case transposed:
		return "^T"
	}
	return "" // a vector keeps its key: nothing uses both layouts
}

// repack lays out a float32 PyTorch parameter as p says, sharing its data
// unless it has to move elements. With the Weights.Validate before
// every graph, the errors here cannot happen; they are reported anyway.
func repack(t *builder.Tensor, p pack) (*builder.Tensor, error) {
	if t == nil {
		return nil, fmt.Errorf("missing tensor")
	}
	if t.DType != builder.Float {
		return nil, fmt.Errorf("dtype %v, expected float32", t.DType)
	}
	if n := builder.NumElements(t.Dims); int64(len(t.Raw)) != 4*n {
		return nil, fmt.Errorf("%d bytes of float32 data for shape %v, expected %d", len(t.Raw), t.Dims, 4*n)
	}
	switch p {
	case asIs:
		return &builder.Tensor{DType: builder.Float, Dims: t.Dims, Raw: t.Raw}, nil
	case vector:
		if len(t.Dims) != 2 || t.Dims[0] != 1 {
			return nil, fmt.Errorf("shape %v, expected [1 n] for a vector", t.Dims)
		}
		return &builder.Tensor{DType: builder.Float, Dims: []int64{t.Dims[1]}, Raw: t.Raw}, nil
	case transposed:
		if len(t.Dims) != 2 {
			return nil, fmt.Errorf("shape %v, expected a matrix to transpose", t.Dims)
		}
		r, c := int(t.Dims[0]), int(t.Dims[1])
		out := make([]byte, len(t.Raw))
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				binary.LittleEndian.PutUint32(out[4*(j*r+i):], binary.LittleEndian.Uint32(t.Raw[4*(i*c+j):]))
			}
		}
		return &builder.Tensor{DType: builder.Float, Dims: []int64{int64(c), int64(r)}, Raw: out}, nil
	}
	return nil, fmt.Errorf("unknown packing %d", p)
}
