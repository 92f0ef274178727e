package onnxeval

import (
	"math"

	"github.com/attnx/attnx/internal/kernel"
)

// unary float operators: f64 computes in float64 (rounded once to float32),
// ints (when set) is the integer form.
type unaryDef struct {
	f64  func(x float64) float64
	ints func(x int64) int64
}

var unaries = map[string]unaryDef{
	"Tanh":       {f64: math.Tanh},
	"Sigmoid":    {f64: sigmoid64},
	"Relu":       {f64: func(x float64) float64 { return max(x, 0) }, ints: func(x int64) int64 { return max(x, 0) }},
	"Exp":        {f64: math.Exp},
	"Log":        {f64: math.Log},
	"Sqrt":       {f64: math.Sqrt},
	"Abs":        {f64: math.Abs, ints: func(x int64) int64 { return max(x, -x) }},
	"Neg":        {f64: func(x float64) float64 { return -x }, ints: func(x int64) int64 { return -x }},
	"Reciprocal": {f64: func(x float64) float64 { return 1 / x }},
	"Floor":      {f64: math.Floor},
	"Ceil":       {f64: math.Ceil},
	"Erf":        {f64: math.Erf},
	"Sin":        {f64: math.Sin},
	"Cos":        {f64: math.Cos},
	"Softplus":   {f64: func(x float64) float64 { return math.Log1p(math.Exp(x)) }},
	"Softsign":   {f64: func(x float64) float64 { return x / (1 + math.Abs(x)) }},
	"Sign": {f64: func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x
	}, ints: func(x int64) int64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	}},
}

func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func init() {
	for name, def := range unaries {
		def := def
		name := name
		register(name, func(n *node) (opFunc, error) {
			if err := n.needInputs(1, 1); err != nil {
				return nil, err
			}
			return func(f *frame, in, out []*Tensor) error {
				o, err := unary(f.r, name, def, in[0])
				out[0] = o
				return err
			}, nil
		})
	}
	register("LeakyRelu", func(n *node) (opFunc, error) {
		alpha := float64(n.float("alpha", 0.01))
		return floatUnary(n, func(x float64) float64 {
			if x < 0 {
				return alpha * x
			}
			return x
		})
	})
	register("Elu", func(n *node) (opFunc, error) {
		alpha := float64(n.float("alpha", 1))
		return floatUnary(n, func(x float64) float64 {
			if x < 0 {
				return alpha * (math.Exp(x) - 1)
			}
			return x
		})
	})
	register("HardSigmoid", func(n *node) (opFunc, error) {
		alpha, beta := float64(n.float("alpha", 0.2)), float64(n.float("beta", 0.5))
		return floatUnary(n, func(x float64) float64 { return max(0, min(1, alpha*x+beta)) })
	})
}

func floatUnary(n *node, fn func(float64) float64) (opFunc, error) {
	if err := n.needInputs(1, 1); err != nil {
		return nil, err
	}
	def := unaryDef{f64: fn}
	return func(f *frame, in, out []*Tensor) error {
		o, err := unary(f.r, n.Op, def, in[0])
		out[0] = o
		return err
	}, nil
}

func unary(r *runner, name string, def unaryDef, t *Tensor) (*Tensor, error) {
	o := newLike(r, t.DType, cloneShape(t.Shape))
	switch x := t.Data.(type) {
	case []float32:
		z := o.Data.([]float32)
		switch name {
		case "Tanh":
			tanh32(x, z)
		case "Sigmoid":
			sigmoid32(x, z)
		case "Abs": // exact in float32: no round trip through float64
			for i, v := range x {
				z[i] = max(v, -v)
			}
		case "Neg":
			for i, v := range x {
				z[i] = -v
			}
		case "Relu":
			for i, v := range x {
				z[i] = max(v, 0)
			}
		default:
			for i, v := range x {
				z[i] = float32(def.f64(float64(v)))
			}
		}
	case []float64:
		z := o.Data.([]float64)
		for i, v := range x {
			z[i] = def.f64(v)
		}
	case []int64:
		if def.ints == nil {
			return nil, errType(name, t.DType)
		}
		z := o.Data.([]int64)
		for i, v := range x {
			z[i] = def.ints(v)
		}
	case []int32:
		if def.ints == nil {
			return nil, errType(name, t.DType)
		}
		z := o.Data.([]int32)
		for i, v := range x {
			z[i] = int32(def.ints(int64(v)))
		}
	case []int8:
		if def.ints == nil {
			return nil, errType(name, t.DType)
		}
		z := o.Data.([]int8)
		for i, v := range x {
			z[i] = int8(def.ints(int64(v)))
		}
	default:
		return nil, errType(name, t.DType)
	}
	return o, nil
}

// tanh32 and sigmoid32 are kernel.Tanh and kernel.Sigmoid: float32, to
// absolute errors of about 1e-7, like ONNX Runtime's own approximations.
func tanh32(x, z []float32) { kernel.Tanh(x, z) }

func sigmoid32(x, z []float32) { kernel.Sigmoid(x, z) }
