package ops

import (
	"fmt"

	"github.com/attnx/attnx/builder"
)

// unary adds a one-input operator whose output has the input's type; inName
// is the input's name in the operator's schema ("X" or "input").
func unary(op, inName string, x *builder.Value, allowed typeSet) *builder.Value {
	ins := operands{{inName, x}}
	return builder.Apply(builder.Call{Op: op, InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
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
	ins := operands{{"A", a}, {"B", b}}
	return builder.Apply(builder.Call{Op: op, InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("A", a, allowed); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[1]); err != nil {
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
	ins := operands{{"X", x}, {"Y", y}}
	return builder.Apply(builder.Call{Op: "Pow", InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
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
func Not(x *builder.Value) *builder.Value { return unary("Not", "X", x, boolTypes) }

// Tanh returns the hyperbolic tangent of x elementwise (ONNX Tanh).
func Tanh(x *builder.Value) *builder.Value { return unary("Tanh", "input", x, floatTypes) }

// Sigmoid returns 1/(1+exp(-x)) elementwise (ONNX Sigmoid).
func Sigmoid(x *builder.Value) *builder.Value { return unary("Sigmoid", "X", x, floatTypes) }

// Relu returns max(x, 0) elementwise (ONNX Relu).
func Relu(x *builder.Value) *builder.Value { return unary("Relu", "X", x, signedTypes) }

// Neg returns -x elementwise (ONNX Neg).
func Neg(x *builder.Value) *builder.Value { return unary("Neg", "X", x, signedTypes) }

// Abs returns |x| elementwise (ONNX Abs).
func Abs(x *builder.Value) *builder.Value { return unary("Abs", "X", x, numTypes) }

// Exp returns e^x elementwise (ONNX Exp).
func Exp(x *builder.Value) *builder.Value { return unary("Exp", "input", x, floatTypes) }

// Log returns the natural logarithm of x elementwise (ONNX Log).
func Log(x *builder.Value) *builder.Value { return unary("Log", "input", x, floatTypes) }

// Sqrt returns the square root of x elementwise (ONNX Sqrt).
func Sqrt(x *builder.Value) *builder.Value { return unary("Sqrt", "X", x, floatTypes) }

// Reciprocal returns 1/x elementwise (ONNX Reciprocal).
func Reciprocal(x *builder.Value) *builder.Value {
	return unary("Reciprocal", "X", x, floatTypes)
}

// Erf returns the error function of x elementwise (ONNX Erf).
func Erf(x *builder.Value) *builder.Value { return unary("Erf", "input", x, numTypes) }

// Identity returns its input unchanged (ONNX Identity).
func Identity(x *builder.Value) *builder.Value {
	return unary("Identity", "input", x, allTypes)
}

// variadic adds Max/Min/Sum-style operators: one or more inputs of the same
// type, broadcast together.
func variadic(op string, xs []*builder.Value, allowed typeSet) *builder.Value {
	ins := numbered("data", xs)
	return builder.Apply(builder.Call{Op: op, InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if len(xs) == 0 {
				return nil, fmt.Errorf("needs at least one input")
			}
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem(ins[0].name, xs[0], allowed); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[1:]...); err != nil {
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
	ins := operands{{"condition", condition}, {"X", x}, {"Y", y}}
	return builder.Apply(builder.Call{Op: "Where", InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("condition", condition, boolTypes); err != nil {
				return nil, err
			}
			if err := sameElem(ins[1], ins[2]); err != nil {
				return nil, err
			}
			s, err := builder.Broadcast(condition.Shape(), x.Shape(), y.Shape())
			if err != nil {
				return nil, err
			}
			return one(x.Elem(), s)
		}}, 1)[0]
}
