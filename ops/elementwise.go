package ops

import (
	"fmt"

	"github.com/attnx/attnx/builder"
)

// unary adds a one-input operator whose output has the input's type.
func unary(op, inName, outName string, x *builder.Value, allowed typeSet) *builder.Value {
	names := []string{inName}
	return builder.Apply(builder.Call{Op: op, InputNames: names, Inputs: []*builder.Value{x},
		Infer: func() ([]*builder.Type, error) {
			if err := required(names, x); err != nil {
				return nil, err
			}
			if err := checkElem(inName, x, allowed); err != nil {
				return nil, err
			}
			return one(x.Elem(), x.Shape())
		}}, 1)[0]
}

// binary adds a two-input broadcasting operator. out gives the output
// element type from the input element type.
func binaryOp(op string, a, b *builder.Value, allowed typeSet, out func(builder.DataType) builder.DataType) *builder.Value {
	names := []string{"A", "B"}
	return builder.Apply(builder.Call{Op: op, InputNames: names, Inputs: []*builder.Value{a, b},
		Infer: func() ([]*builder.Type, error) {
			if err := required(names, a, b); err != nil {
				return nil, err
			}
			if err := checkElem("A", a, allowed); err != nil {
				return nil, err
			}
			if err := sameElem(names, a, b); err != nil {
				return nil, err
			}
			s, err := builder.Broadcast(a.Shape(), b.Shape())
			if err != nil {
				return nil, err
			}
			return one(out(a.Elem()), s)
		}}, 1)[0]
}

func same(d builder.DataType) builder.DataType { return d }
func toBool(builder.DataType) builder.DataType { return builder.Bool }
func variadicNames(n int, prefix string) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s_%d", prefix, i)
	}
	return names
}

// Add returns a + b elementwise, with numpy broadcasting (ONNX Add).
func Add(a, b *builder.Value) *builder.Value { return binaryOp("Add", a, b, numTypes, same) }

// Sub returns a - b elementwise, with numpy broadcasting (ONNX Sub).
func Sub(a, b *builder.Value) *builder.Value { return binaryOp("Sub", a, b, numTypes, same) }

// Mul returns a * b elementwise, with numpy broadcasting (ONNX Mul).
func Mul(a, b *builder.Value) *builder.Value { return binaryOp("Mul", a, b, numTypes, same) }

// Div returns a / b elementwise, with numpy broadcasting (ONNX Div).
func Div(a, b *builder.Value) *builder.Value { return binaryOp("Div", a, b, numTypes, same) }

// Pow returns x raised to the power y elementwise, with numpy broadcasting
// (ONNX Pow). The exponent may have a different numeric type.
func Pow(x, y *builder.Value) *builder.Value {
	names := []string{"X", "Y"}
	return builder.Apply(builder.Call{Op: "Pow", InputNames: names, Inputs: []*builder.Value{x, y},
		Infer: func() ([]*builder.Type, error) {
			if err := required(names, x, y); err != nil {
				return nil, err
			}
			if err := checkElem("X", x, powTypes); err != nil {
				return nil, err
			}
			if err := checkElem("Y", y, numTypes); err != nil {
				return nil, err
			}
			s, err := builder.Broadcast(x.Shape(), y.Shape())
			if err != nil {
				return nil, err
			}
			return one(x.Elem(), s)
		}}, 1)[0]
}

// Equal returns a == b elementwise as bool, with broadcasting (ONNX Equal).
func Equal(a, b *builder.Value) *builder.Value {
	return binaryOp("Equal", a, b, append(typeSet{builder.Bool}, numTypes...), toBool)
}

// Less returns a < b elementwise as bool, with broadcasting (ONNX Less).
func Less(a, b *builder.Value) *builder.Value { return binaryOp("Less", a, b, numTypes, toBool) }

// LessOrEqual returns a <= b elementwise as bool, with broadcasting (ONNX
// LessOrEqual).
func LessOrEqual(a, b *builder.Value) *builder.Value {
	return binaryOp("LessOrEqual", a, b, numTypes, toBool)
}

// Greater returns a > b elementwise as bool, with broadcasting (ONNX Greater).
func Greater(a, b *builder.Value) *builder.Value { return binaryOp("Greater", a, b, numTypes, toBool) }

// GreaterOrEqual returns a >= b elementwise as bool, with broadcasting (ONNX
// GreaterOrEqual).
func GreaterOrEqual(a, b *builder.Value) *builder.Value {
	return binaryOp("GreaterOrEqual", a, b, numTypes, toBool)
}

// And returns the logical and of two bool tensors, with broadcasting (ONNX
// And).
func And(a, b *builder.Value) *builder.Value { return binaryOp("And", a, b, boolTypes, same) }

// Or returns the logical or of two bool tensors, with broadcasting (ONNX Or).
func Or(a, b *builder.Value) *builder.Value { return binaryOp("Or", a, b, boolTypes, same) }

// Xor returns the logical exclusive or of two bool tensors, with
// broadcasting (ONNX Xor).
func Xor(a, b *builder.Value) *builder.Value { return binaryOp("Xor", a, b, boolTypes, same) }

// Not returns the logical negation of a bool tensor (ONNX Not).
func Not(x *builder.Value) *builder.Value { return unary("Not", "X", "Y", x, boolTypes) }

// Tanh returns the hyperbolic tangent of x elementwise (ONNX Tanh).
func Tanh(x *builder.Value) *builder.Value { return unary("Tanh", "input", "output", x, floatTypes) }

// Sigmoid returns 1/(1+exp(-x)) elementwise (ONNX Sigmoid).
func Sigmoid(x *builder.Value) *builder.Value { return unary("Sigmoid", "X", "Y", x, floatTypes) }

// Relu returns max(x, 0) elementwise (ONNX Relu).
func Relu(x *builder.Value) *builder.Value { return unary("Relu", "X", "Y", x, signedTypes) }

// Neg returns -x elementwise (ONNX Neg).
func Neg(x *builder.Value) *builder.Value { return unary("Neg", "X", "Y", x, signedTypes) }

// Abs returns |x| elementwise (ONNX Abs).
func Abs(x *builder.Value) *builder.Value { return unary("Abs", "X", "Y", x, numTypes) }

// Exp returns e^x elementwise (ONNX Exp).
func Exp(x *builder.Value) *builder.Value { return unary("Exp", "input", "output", x, floatTypes) }

// Log returns the natural logarithm of x elementwise (ONNX Log).
func Log(x *builder.Value) *builder.Value { return unary("Log", "input", "output", x, floatTypes) }

// Sqrt returns the square root of x elementwise (ONNX Sqrt).
func Sqrt(x *builder.Value) *builder.Value { return unary("Sqrt", "X", "Y", x, floatTypes) }

// Reciprocal returns 1/x elementwise (ONNX Reciprocal).
func Reciprocal(x *builder.Value) *builder.Value {
	return unary("Reciprocal", "X", "Y", x, floatTypes)
}

// Erf returns the error function of x elementwise (ONNX Erf).
func Erf(x *builder.Value) *builder.Value { return unary("Erf", "input", "output", x, numTypes) }

// Identity returns its input unchanged (ONNX Identity).
func Identity(x *builder.Value) *builder.Value {
	return unary("Identity", "input", "output", x, allTypes)
}

// variadic adds Max/Min/Sum-style operators: one or more inputs of the same
// type, broadcast together.
func variadic(op string, xs []*builder.Value, allowed typeSet) *builder.Value {
	names := variadicNames(len(xs), "data")
	return builder.Apply(builder.Call{Op: op, InputNames: names, Inputs: xs,
		Infer: func() ([]*builder.Type, error) {
			if len(xs) == 0 {
				return nil, fmt.Errorf("needs at least one input")
			}
			if err := required(names, xs...); err != nil {
				return nil, err
			}
			if err := checkElem(names[0], xs[0], allowed); err != nil {
				return nil, err
			}
			if err := sameElem(names, xs...); err != nil {
				return nil, err
			}
			shapes := make([]builder.Shape, len(xs))
			for i, x := range xs {
				shapes[i] = x.Shape()
			}
			s, err := builder.Broadcast(shapes...)
			if err != nil {
				return nil, err
			}
			return one(xs[0].Elem(), s)
		}}, 1)[0]
}

// Max returns the elementwise maximum of its inputs, with broadcasting (ONNX
// Max).
func Max(xs ...*builder.Value) *builder.Value { return variadic("Max", xs, numTypes) }

// Min returns the elementwise minimum of its inputs, with broadcasting (ONNX
// Min).
func Min(xs ...*builder.Value) *builder.Value { return variadic("Min", xs, numTypes) }

// Sum returns the elementwise sum of its inputs, with broadcasting (ONNX
// Sum).
func Sum(xs ...*builder.Value) *builder.Value { return variadic("Sum", xs, floatTypes) }

// Where returns x where condition is true and y elsewhere, with broadcasting
// of all three (ONNX Where).
func Where(condition, x, y *builder.Value) *builder.Value {
	names := []string{"condition", "X", "Y"}
	return builder.Apply(builder.Call{Op: "Where", InputNames: names, Inputs: []*builder.Value{condition, x, y},
		Infer: func() ([]*builder.Type, error) {
			if err := required(names, condition, x, y); err != nil {
				return nil, err
			}
			if err := checkElem("condition", condition, boolTypes); err != nil {
				return nil, err
			}
			if err := sameElem(names[1:], x, y); err != nil {
				return nil, err
			}
			s, err := builder.Broadcast(condition.Shape(), x.Shape(), y.Shape())
			if err != nil {
				return nil, err
			}
			return one(x.Elem(), s)
		}}, 1)[0]
}
