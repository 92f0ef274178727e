package onnxrun

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/attnx/attnx/builder"
)

// F16 is one IEEE 754 half-precision (binary16) number, held as its bit
// pattern: a Tensor of ONNX type float16 has Data []F16. Go has no float16
// arithmetic; convert with Float32 and F16From (or Tensor.AsFloat32).
type F16 uint16

// BF16 is one bfloat16 number (the top 16 bits of a float32), held as its
// bit pattern: a Tensor of ONNX type bfloat16 has Data []BF16. Convert with
// Float32 and BF16From (or Tensor.AsFloat32).
type BF16 uint16

// Float32 returns h as a float32 (exactly: every half is a float32).
func (h F16) Float32() float32 { return builder.HalfToFloat32(uint16(h)) }

// F16From rounds f to the nearest half (ties to even). Values beyond the
// half range become ±Inf; NaN stays NaN.
func F16From(f float32) F16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	frac := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if frac != 0 {
			return F16(sign | 0x7e00 | uint16(frac>>13))
		}
		return F16(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return F16(sign | 0x7c00)
	}
	if e <= 0 { // subnormal half, or zero
		if e < -10 {
			return F16(sign)
		}
		m := frac | 0x800000 // implicit bit
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return F16(sign | uint16(half))
	}
	half := uint32(e)<<10 | frac>>13
	rem := frac & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to Inf: still correct
	}
	return F16(sign | uint16(half))
}

// Float32 returns b as a float32 (exactly).
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// BF16From rounds f to the nearest bfloat16 (ties to even); NaN stays NaN.
func BF16From(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 {
		return BF16(b>>16 | 0x40) // quiet NaN, keeping the sign
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// NewFloat16 returns a float16 tensor; see NewTensor.
func NewFloat16(shape []int64, data []F16) *Tensor { return NewTensor(shape, data) }

// NewBFloat16 returns a bfloat16 tensor; see NewTensor.
func NewBFloat16(shape []int64, data []BF16) *Tensor { return NewTensor(shape, data) }

// Float16s returns Data as []F16, or an error naming the actual type.
func (t *Tensor) Float16s() ([]F16, error) { return dataAs[F16](t) }

// BFloat16s returns Data as []BF16, or an error naming the actual type.
func (t *Tensor) BFloat16s() ([]BF16, error) { return dataAs[BF16](t) }

// AsFloat32 returns the data of a float32, float16, bfloat16 or float64
// tensor converted to a new []float32 (float64 is rounded).
func (t *Tensor) AsFloat32() ([]float32, error) {
	switch d := t.Data.(type) {
	case []float32:
		return append([]float32(nil), d...), nil
	case []F16:
		out := make([]float32, len(d))
		for i, h := range d {
			out[i] = h.Float32()
		}
		return out, nil
	case []BF16:
		out := make([]float32, len(d))
		for i, h := range d {
			out[i] = h.Float32()
		}
		return out, nil
	case []float64:
		out := make([]float32, len(d))
		for i, v := range d {
			out[i] = float32(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("tensor is %s, not a floating-point tensor", t)
}

// halfBytes views the 16-bit elements of d as bytes, without copying, for
// ORT (which reads them in the machine's byte order, as Go stores them).
func halfBytes[T F16 | BF16](d []T) []byte {
	if len(d) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&d[0])), 2*len(d))
}

// halvesOf views b as 16-bit elements without copying when it is aligned,
// and copies it otherwise.
func halvesOf[T F16 | BF16](b []byte) []T {
	n := len(b) / 2
	if n == 0 {
		return []T{}
	}
	if uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]T, n)
	copy(halfBytes(out), b)
	return out
}
