package quant

import (
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
)

// Blockwise is a weight matrix W [N, K] (PyTorch's Linear layout: N outputs,
// K inputs) quantized block-wise along K in the layout of ONNX Runtime's
// com.microsoft MatMulNBits, which computes Y = A · Wᵀ:
//
//   - each row n is cut into Blocks() blocks of BlockSize consecutive
//     inputs (the last one padded when BlockSize does not divide K);
//   - every block has its own scale and zero point, and element k of row n
//     stands for (q - zero point) * scale;
//   - B holds the quantized values packed Bits at a time into bytes, the
//     first value in the lowest bits: [N, Blocks(), BlobSize()] bytes;
//   - Scales holds N*Blocks() scales, row n's blocks together;
//   - ZeroPoints, when not nil, holds the zero points packed the same way,
//     ceil(Blocks()*Bits/8) bytes per row; when nil every block's zero
//     point is the operator's default 2^(Bits-1) (symmetric quantization).
//
// The quantizer follows ONNX Runtime's reference blockwise quantizer
// (MlasQuantizeBlockwise): symmetric blocks map the element of largest
// magnitude, with its sign, to -2^(Bits-1), so the scale may be negative and
// the whole range [-2^(Bits-1), 2^(Bits-1)-1] is used; asymmetric blocks
// stretch [min(0, lo), max(0, hi)] over [0, 2^Bits-1] with a rounded zero
// point.
type Blockwise struct {
	// N is the number of rows (output features), K the number of columns
	// (input features).
	N, K int
	// Bits is the width of one quantized value: 2, 4 or 8.
	Bits int
	// BlockSize is the number of consecutive inputs sharing a scale: a power
	// of two, at least 16.
	BlockSize int
	// B holds the packed quantized values, [N, Blocks(), BlobSize()].
	B []byte
	// Scales holds one scale per block, [N * Blocks()].
	Scales []float32
	// ZeroPoints holds the packed zero points, [N, ZeroPointBytes()], or nil
	// for the default zero point 2^(Bits-1).
	ZeroPoints []byte
}

// Blocks returns the number of blocks per row, ceil(K / BlockSize).
func (b *Blockwise) Blocks() int { return (b.K + b.BlockSize - 1) / b.BlockSize }

// BlobSize returns the number of bytes one block's values take.
func (b *Blockwise) BlobSize() int { return b.BlockSize * b.Bits / 8 }

// ZeroPointBytes returns the number of bytes of one row's packed zero
// points, ceil(Blocks() * Bits / 8).
func (b *Blockwise) ZeroPointBytes() int { return (b.Blocks()*b.Bits + 7) / 8 }

// mid is the default zero point, 2^(Bits-1).
func (b *Blockwise) mid() int { return 1 << (b.Bits - 1) }

// QuantizeBlockwise quantizes the row-major N x K matrix w (N outputs, K
// inputs) to bits-bit values in blocks of blockSize along K, symmetric (no
// zero points stored) or asymmetric (a zero point per block).
func QuantizeBlockwise(w []float32, n, k, bits, blockSize int, symmetric bool) (*Blockwise, error) {
	if err := checkMatrix(w, n, k); err != nil {
		return nil, err
	}
	if bits != 2 && bits != 4 && bits != 8 {
		return nil, fmt.Errorf("quant: %d bits per value, want 2, 4 or 8", bits)
	}
	if blockSize < 16 || blockSize&(blockSize-1) != 0 {
		return nil, fmt.Errorf("quant: block size %d, want a power of two of at least 16", blockSize)
	}
	b := &Blockwise{N: n, K: k, Bits: bits, BlockSize: blockSize}
	nb := b.Blocks()
	b.B = make([]byte, n*nb*b.BlobSize())
	b.Scales = make([]float32, n*nb)
	if !symmetric {
		b.ZeroPoints = make([]byte, n*b.ZeroPointBytes())
	}
	qmax := 1<<bits - 1
	for r := 0; r < n; r++ {
		row := w[r*k : (r+1)*k]
		for blk := 0; blk < nb; blk++ {
			lo, hi := blk*blockSize, min((blk+1)*blockSize, k)
			vals := row[lo:hi]
			scale, zp := b.blockParams(vals)
			b.Scales[r*nb+blk] = scale
			if !symmetric {
				putBits(b.ZeroPoints[r*b.ZeroPointBytes():], blk, bits, zp)
			}
			blob := b.B[(r*nb+blk)*b.BlobSize():]
			for j := 0; j < blockSize; j++ {
				q := zp // padding past K, and every value of an all-zero block
				if j < len(vals) && scale != 0 {
					q = clampRound(vals[j]/scale+float32(zp), 0, qmax)
				}
				putBits(blob, j, bits, q)
			}
		}
	}
	return b, nil
}

// blockParams returns the scale and zero point of one block.
func (b *Blockwise) blockParams(vals []float32) (scale float32, zp int) {
	lo, hi := vals[0], vals[0]
	for _, v := range vals[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	if b.ZeroPoints == nil {
		// The element of largest magnitude, sign kept, goes to -2^(Bits-1).
		m := hi
		if float32(math.Abs(float64(lo))) > float32(math.Abs(float64(hi))) {
			m = lo
		}
		return m / float32(-b.mid()), b.mid()
	}
	lo, hi = min(lo, 0), max(hi, 0)
	qmax := 1<<b.Bits - 1
	scale = (hi - lo) / float32(qmax)
	if scale == 0 {
		return 0, 0
	}
	return scale, clampRound(-lo/scale, 0, qmax)
}

// putBits stores the value v (bits wide) as the i-th value of packed.
func putBits(packed []byte, i, bits, v int) {
	pos := i * bits
	packed[pos/8] |= byte(v << (pos % 8))
}

// getBits returns the i-th bits-wide value of packed.
func getBits(packed []byte, i, bits int) int {
	pos := i * bits
	return int(packed[pos/8]>>(pos%8)) & (1<<bits - 1)
}

// ZeroPoint returns the zero point of row r's block blk.
func (b *Blockwise) ZeroPoint(r, blk int) int {
	if b.ZeroPoints == nil {
		return b.mid()
	}
	return getBits(b.ZeroPoints[r*b.ZeroPointBytes():], blk, b.Bits)
}

// Value returns the quantized value (before the zero point is subtracted)
// of element (r, c).
func (b *Blockwise) Value(r, c int) int {
	blk := c / b.BlockSize
	return getBits(b.B[(r*b.Blocks()+blk)*b.BlobSize():], c%b.BlockSize, b.Bits)
}

// Dequantize returns the N x K float32 matrix the quantized values stand
// for, row-major: the weights MatMulNBits multiplies by.
func (b *Blockwise) Dequantize() []float32 {
	out := make([]float32, b.N*b.K)
	nb := b.Blocks()
	for r := 0; r < b.N; r++ {
		for c := 0; c < b.K; c++ {
			blk := c / b.BlockSize
			out[r*b.K+c] = float32(b.Value(r, c)-b.ZeroPoint(r, blk)) * b.Scales[r*nb+blk]
		}
	}
	return out
}

// MaxError returns the largest |w - Dequantize(w)| the quantization allows
// for element (r, c): half its block's |scale| when asymmetric; the whole
// |scale| when symmetric, because the side of zero opposite the largest
// magnitude reaches only 2^(Bits-1)-1 steps and values beyond are clipped.
func (b *Blockwise) MaxError(r, c int) float32 {
	s := float32(math.Abs(float64(b.Scales[r*b.Blocks()+c/b.BlockSize])))
	if b.ZeroPoints == nil {
		return s
	}
	return s / 2
}

// Tensors returns MatMulNBits's inputs B (uint8 [N, Blocks(), BlobSize()]),
// scales (float32 [N * Blocks()]) and zero_points (uint8 [N *
// ZeroPointBytes()], nil when symmetric).
func (b *Blockwise) Tensors() (packed, scales, zeroPoints *builder.Tensor) {
	packed = uint8Tensor([]int64{int64(b.N), int64(b.Blocks()), int64(b.BlobSize())}, b.B)
	scales = builder.FloatTensor([]int64{int64(len(b.Scales))}, b.Scales)
	if b.ZeroPoints != nil {
		zeroPoints = uint8Tensor([]int64{int64(len(b.ZeroPoints))}, b.ZeroPoints)
	}
	return packed, scales, zeroPoints
}

// Bytes returns the size of the packed values, scales and zero points.
func (b *Blockwise) Bytes() int { return len(b.B) + 4*len(b.Scales) + len(b.ZeroPoints) }
