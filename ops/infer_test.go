package ops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
)

// in adds a float32 graph input with the given dims.
func in(g *builder.Graph, name string, elem builder.DataType, dims ...any) *builder.Value {
	return g.Input(name, elem, builder.Dims(dims...))
}

const (
	f32 = builder.Float
	i64 = builder.Int64
	i32 = builder.Int32
	bl  = builder.Bool
)

func TestInferTypes(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *builder.Graph) *builder.Value
		want  string
	}{
		{"Add broadcast", func(g *builder.Graph) *builder.Value {
			return Add(in(g, "a", f32, "batch", 1, 5), in(g, "b", f32, 4, 1))
		}, "float32[batch,4,5]"},
		{"Sub", func(g *builder.Graph) *builder.Value { return Sub(in(g, "a", i64, 3), in(g, "b", i64)) }, "int64[3]"},
		{"Mul", func(g *builder.Graph) *builder.Value { return Mul(in(g, "a", f32, "s", 3), in(g, "b", f32, "s", 3)) }, "float32[s,3]"},
		{"Div", func(g *builder.Graph) *builder.Value { return Div(in(g, "a", f32, 2, 3), in(g, "b", f32, 3)) }, "float32[2,3]"},
		{"Pow", func(g *builder.Graph) *builder.Value { return Pow(in(g, "a", f32, 2, 3), in(g, "b", i64)) }, "float32[2,3]"},
		{"Tanh", func(g *builder.Graph) *builder.Value { return Tanh(in(g, "x", f32, "batch", 7)) }, "float32[batch,7]"},
		{"Sigmoid", func(g *builder.Graph) *builder.Value { return Sigmoid(in(g, "x", f32, 2)) }, "float32[2]"},
		{"Relu int", func(g *builder.Graph) *builder.Value { return Relu(in(g, "x", i32, 2)) }, "int32[2]"},
		{"Neg Exp Log Sqrt", func(g *builder.Graph) *builder.Value {
			return Sqrt(Log(Exp(Neg(in(g, "x", f32, "b", 2)))))
		}, "float32[b,2]"},
		{"Equal", func(g *builder.Graph) *builder.Value { return Equal(in(g, "a", i64, "b", 1), in(g, "c", i64, 5)) }, "bool[b,5]"},
		{"Less Greater", func(g *builder.Graph) *builder.Value {
			return And(Less(in(g, "a", f32, 3), in(g, "b", f32, 3)), Greater(in(g, "c", f32, 3), in(g, "d", f32, 1)))
		}, "bool[3]"},
		{"Or Not", func(g *builder.Graph) *builder.Value { return Not(Or(in(g, "a", bl, 2, 1), in(g, "b", bl, 3))) }, "bool[2,3]"},
		{"GreaterOrEqual", func(g *builder.Graph) *builder.Value {
			return GreaterOrEqual(in(g, "a", f32, 3), in(g, "b", f32, 3))
		}, "bool[3]"},
		{"Where", func(g *builder.Graph) *builder.Value {
			return Where(in(g, "c", bl, "batch", 1), in(g, "x", f32, "batch", 13), in(g, "y", f32))
		}, "float32[batch,13]"},
		{"Max variadic", func(g *builder.Graph) *builder.Value {
			return Max(in(g, "a", f32, 3, 1), in(g, "b", f32, 4), in(g, "c", f32, 1))
		}, "float32[3,4]"},
		{"Identity", func(g *builder.Graph) *builder.Value { return Identity(in(g, "x", builder.String, 2)) }, "string[2]"},
		{"MatMul 3D x 2D", func(g *builder.Graph) *builder.Value {
			return MatMul(in(g, "a", f32, "b", "S", 16), in(g, "w", f32, 16, 16))
		}, "float32[b,S,16]"},
		{"MatMul 1D x 1D", func(g *builder.Graph) *builder.Value { return MatMul(in(g, "a", f32, 3), in(g, "b", f32, 3)) }, "float32[]"},
		{"MatMul 1D x 3D", func(g *builder.Graph) *builder.Value { return MatMul(in(g, "a", f32, 3), in(g, "b", f32, 2, 3, 4)) }, "float32[2,4]"},
		{"MatMul 3D x 1D", func(g *builder.Graph) *builder.Value { return MatMul(in(g, "a", f32, 2, 5, 3), in(g, "b", f32, 3)) }, "float32[2,5]"},
		{"MatMul batch broadcast", func(g *builder.Graph) *builder.Value {
			return MatMul(in(g, "a", f32, 1, "h", 5, 3), in(g, "b", f32, 7, 1, 3, 4))
		}, "float32[7,h,5,4]"},
		{"Gemm", func(g *builder.Graph) *builder.Value {
			return Gemm(in(g, "a", f32, "batch", 12), in(g, "b", f32, 13, 12), in(g, "c", f32, 13), GemmOpts{TransB: true, Alpha: Float(0.5)})
		}, "float32[batch,13]"},
		{"Softmax", func(g *builder.Graph) *builder.Value { return Softmax(in(g, "x", f32, "b", "S"), -1) }, "float32[b,S]"},
		{"LogSoftmax", func(g *builder.Graph) *builder.Value { return LogSoftmax(in(g, "x", f32, "b", 9), 1) }, "float32[b,9]"},
		{"Concat", func(g *builder.Graph) *builder.Value {
			return Concat(-1, in(g, "a", f32, "b", 3), in(g, "c", f32, "b", 4))
		}, "float32[b,7]"},
		{"Concat symbolic axis", func(g *builder.Graph) *builder.Value {
			return Concat(0, in(g, "a", f32, "s", 3), in(g, "c", f32, 1, 3))
		}, "float32[?,3]"},
		{"Split equal", func(g *builder.Graph) *builder.Value {
			return Split(in(g, "x", f32, "b", 8), nil, 1, 4)[3]
		}, "float32[b,2]"},
		{"Split sizes", func(g *builder.Graph) *builder.Value {
			return Split(in(g, "x", f32, 6, "b"), ConstInt64s(g, 2, 4), 0, 2)[1]
		}, "float32[4,b]"},
		{"Slice const", func(g *builder.Graph) *builder.Value {
			return Slice(in(g, "x", f32, "b", 10, 5), ConstInt64s(g, 1, -1), ConstInt64s(g, 9, 0), ConstInt64s(g, 1, 2), ConstInt64s(g, 2, -1))
		}, "float32[b,4,4]"},
		{"Slice keep symbolic", func(g *builder.Graph) *builder.Value {
			return Slice(in(g, "x", f32, "b", 10), ConstInt64s(g, 0, 3), ConstInt64s(g, 1<<62, 1000), nil, nil)
		}, "float32[b,7]"},
		{"Slice runtime", func(g *builder.Graph) *builder.Value {
			return Slice(in(g, "x", f32, "b", 10), in(g, "s", i64, 1), in(g, "e", i64, 1), nil, nil)
		}, "float32[?,?]"},
		{"Squeeze axes", func(g *builder.Graph) *builder.Value {
			return Squeeze(in(g, "x", f32, 1, "b", 1, 4), ConstInt64s(g, 0, -2))
		}, "float32[b,4]"},
		{"Squeeze all", func(g *builder.Graph) *builder.Value { return Squeeze(in(g, "x", f32, 1, 3, 1), nil) }, "float32[3]"},
		{"Unsqueeze", func(g *builder.Graph) *builder.Value {
			return Unsqueeze(in(g, "x", f32, "b", 4), ConstInt64s(g, 0, -1))
		}, "float32[1,b,4,1]"},
		{"Reshape 0 and -1", func(g *builder.Graph) *builder.Value {
			return Reshape(in(g, "x", f32, "batch", 6, 4), ConstInt64s(g, 0, -1), ReshapeOpts{})
		}, "float32[batch,24]"},
		{"Reshape symbolic -1", func(g *builder.Graph) *builder.Value {
			return Reshape(in(g, "x", f32, "batch", 6, 4), ConstInt64s(g, -1, 4, 2, 3), ReshapeOpts{})
		}, "float32[batch,4,2,3]"},
		{"Reshape static", func(g *builder.Graph) *builder.Value {
			return Reshape(in(g, "x", f32, 2, 3, 4), ConstInt64s(g, 4, -1), ReshapeOpts{})
		}, "float32[4,6]"},
		{"Reshape from Shape", func(g *builder.Graph) *builder.Value {
			return Reshape(in(g, "x", f32, 24), Shape(in(g, "y", f32, 2, 3, 4), ShapeOpts{}), ReshapeOpts{})
		}, "float32[2,3,4]"},
		{"Transpose", func(g *builder.Graph) *builder.Value {
			return Transpose(in(g, "x", f32, "S", "b", 8), []int64{1, 0, 2})
		}, "float32[b,S,8]"},
		{"Transpose default", func(g *builder.Graph) *builder.Value { return Transpose(in(g, "x", f32, 2, 3, 4), nil) }, "float32[4,3,2]"},
		{"Expand", func(g *builder.Graph) *builder.Value {
			return Expand(in(g, "x", f32, 3, 1), ConstInt64s(g, 2, 1, 6))
		}, "float32[2,3,6]"},
		{"Shape", func(g *builder.Graph) *builder.Value { return Shape(in(g, "x", f32, "b", 3, 4), ShapeOpts{}) }, "int64[3]"},
		{"Shape start end", func(g *builder.Graph) *builder.Value {
			return Shape(in(g, "x", f32, "b", 3, 4), ShapeOpts{Start: 1, End: Int(-1)})
		}, "int64[1]"},
		{"Cast", func(g *builder.Graph) *builder.Value { return Cast(in(g, "x", i64, "b"), builder.Float) }, "float32[b]"},
		{"ReduceSum axes", func(g *builder.Graph) *builder.Value {
			return ReduceSum(in(g, "x", f32, "b", 5, 6), ConstInt64s(g, 1), ReduceSumOpts{})
		}, "float32[b,1,6]"},
		{"ReduceSum no keepdims", func(g *builder.Graph) *builder.Value {
			return ReduceSum(in(g, "x", f32, "b", 5, 6), ConstInt64s(g, -1), ReduceSumOpts{NoKeepDims: true})
		}, "float32[b,5]"},
		{"ReduceSum all", func(g *builder.Graph) *builder.Value {
			return ReduceSum(in(g, "x", f32, "b", 5), nil, ReduceSumOpts{NoKeepDims: true})
		}, "float32[]"},
		{"ReduceSum noop", func(g *builder.Graph) *builder.Value {
			return ReduceSum(in(g, "x", f32, "b", 5), nil, ReduceSumOpts{NoopWithEmptyAxes: true})
		}, "float32[b,5]"},
		{"ReduceMax", func(g *builder.Graph) *builder.Value {
			return ReduceMax(in(g, "x", f32, "b", 5, 6), ReduceOpts{Axes: []int64{1}})
		}, "float32[b,1,6]"},
		{"ReduceMean", func(g *builder.Graph) *builder.Value {
			return ReduceMean(in(g, "x", f32, "b", 5, 6), ReduceOpts{Axes: []int64{2}, NoKeepDims: true})
		}, "float32[b,5]"},
		{"ArgMax", func(g *builder.Graph) *builder.Value {
			return ArgMax(in(g, "x", f32, "b", 13), 1, ArgOpts{NoKeepDims: true})
		}, "int64[b]"},
		{"ArgMax keepdims", func(g *builder.Graph) *builder.Value { return ArgMax(in(g, "x", f32, "b", 13), -1, ArgOpts{}) }, "int64[b,1]"},
		{"Gather", func(g *builder.Graph) *builder.Value {
			return Gather(in(g, "emb", f32, 100, 16), in(g, "tok", i64, "batch"), 0)
		}, "float32[batch,16]"},
		{"Gather axis 1", func(g *builder.Graph) *builder.Value {
			return Gather(in(g, "x", f32, 2, 3, 4), in(g, "i", i32, 5, 6), 1)
		}, "float32[2,5,6,4]"},
		{"Gather scalar index", func(g *builder.Graph) *builder.Value {
			return Gather(in(g, "x", f32, "S", "b", 4), ScalarInt64(g, 0), 0)
		}, "float32[b,4]"},
		{"Range const", func(g *builder.Graph) *builder.Value {
			return Range(ScalarInt64(g, 1), ScalarInt64(g, 10), ScalarInt64(g, 3))
		}, "int64[3]"},
		{"Range runtime", func(g *builder.Graph) *builder.Value {
			return Range(ScalarInt64(g, 0), in(g, "n", i64), ScalarInt64(g, 1))
		}, "int64[?]"},
		{"Constant", func(g *builder.Graph) *builder.Value { return ConstFloats(g, 1, 2, 3) }, "float32[3]"},
		{"ScalarFloat", func(g *builder.Graph) *builder.Value { return ScalarFloat(g, 1) }, "float32[]"},
		{"ConstantOfShape", func(g *builder.Graph) *builder.Value {
			return ConstantOfShape(ConstInt64s(g, 2, 3), builder.Int64Tensor([]int64{1}, []int64{7}))
		}, "int64[2,3]"},
		{"ConstantOfShape from Shape", func(g *builder.Graph) *builder.Value {
			return ConstantOfShape(Shape(in(g, "x", f32, "b", 3), ShapeOpts{}), nil)
		}, "float32[?,?]"},
		{"Pad", func(g *builder.Graph) *builder.Value {
			return Pad(in(g, "x", f32, "b", 3), ConstInt64s(g, 0, 1, 0, 2), PadOpts{})
		}, "float32[b,6]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := builder.New("g")
			v := c.build(g)
			if err := g.Err(); err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got := v.Type().String(); got != c.want {
				t.Errorf("type = %s, want %s", got, c.want)
			}
		})
	}
}

func TestInferRecurrent(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *builder.Graph) []*builder.Value
		want  []string
	}{
		{"LSTM layout 0", func(g *builder.Graph) []*builder.Value {
			y, yh, yc := LSTM(in(g, "x", f32, "S", "B", 10), in(g, "w", f32, 1, 80, 10), in(g, "r", f32, 1, 80, 20),
				LSTMOpts{RNNOpts: RNNOpts{B: in(g, "b", f32, 1, 160)}})
			return []*builder.Value{y, yh, yc}
		}, []string{"float32[S,1,B,20]", "float32[1,B,20]", "float32[1,B,20]"}},
		{"LSTM bidirectional initial state", func(g *builder.Graph) []*builder.Value {
			y, yh, yc := LSTM(in(g, "x", f32, 7, "B", 10), in(g, "w", f32, 2, 12, 10), in(g, "r", f32, 2, 12, 3),
				LSTMOpts{RNNOpts: RNNOpts{Direction: "bidirectional", InitialH: in(g, "h", f32, 2, 5, 3)}, InitialC: in(g, "c", f32, 2, 5, 3), P: in(g, "p", f32, 2, 9)})
			return []*builder.Value{y, yh, yc}
		}, []string{"float32[7,2,5,3]", "float32[2,5,3]", "float32[2,5,3]"}},
		{"LSTM layout 1 omit Y", func(g *builder.Graph) []*builder.Value {
			y, yh, yc := LSTM(in(g, "x", f32, "B", "S", 4), in(g, "w", f32, 1, 8, 4), in(g, "r", f32, 1, 8, 2),
				LSTMOpts{RNNOpts: RNNOpts{Layout: 1, OmitY: true}})
			if y != nil {
				t.Error("omitted Y must be nil")
			}
			return []*builder.Value{yh, yc}
		}, []string{"float32[B,1,2]", "float32[B,1,2]"}},
		{"GRU", func(g *builder.Graph) []*builder.Value {
			y, yh := GRU(in(g, "x", f32, "S", "B", 4), in(g, "w", f32, 1, 15, 4), in(g, "r", f32, 1, 15, 5),
				GRUOpts{RNNOpts: RNNOpts{SequenceLens: in(g, "len", i32, "B")}, LinearBeforeReset: true})
			return []*builder.Value{y, yh}
		}, []string{"float32[S,1,B,5]", "float32[1,B,5]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := builder.New("g")
			vs := c.build(g)
			if err := g.Err(); err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			for i, v := range vs {
				if got := v.Type().String(); got != c.want[i] {
					t.Errorf("output %d type = %s, want %s", i, got, c.want[i])
				}
			}
		})
	}
}

func TestInferErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(g *builder.Graph)
		want  []string
	}{
		{"MatMul inner dims", func(g *builder.Graph) { MatMul(in(g, "a", f32, "batch", 13), in(g, "b", f32, 12, 13)) },
			[]string{"MatMul(A: float32[batch,13], B: float32[12,13])", "inner dimensions differ: A is float32[batch,13] and B is float32[12,13]", "infer_test.go:"}},
		{"MatMul elem", func(g *builder.Graph) { MatMul(in(g, "a", bl, 2, 2), in(g, "b", bl, 2, 2)) },
			[]string{"A is bool[2,2], want one of float16, float32"}},
		{"MatMul scalar", func(g *builder.Graph) { MatMul(in(g, "a", f32), in(g, "b", f32, 2)) }, []string{"want rank 1 or more"}},
		{"Add mixed elem", func(g *builder.Graph) { Add(in(g, "a", f32, 2), in(g, "b", i64, 2)) },
			[]string{"A is float32[2] but B is int64[2]: element types must match"}},
		{"Add broadcast", func(g *builder.Graph) { Add(in(g, "a", f32, 3), in(g, "b", f32, 4)) }, []string{"cannot broadcast"}},
		{"Tanh int", func(g *builder.Graph) { Tanh(in(g, "x", i64, 3)) }, []string{"input is int64[3], want one of float16, float32, float64, bfloat16"}},
		{"Not float", func(g *builder.Graph) { Not(in(g, "x", f32, 3)) }, []string{"X is float32[3], want bool"}},
		{"Softmax axis", func(g *builder.Graph) { Softmax(in(g, "x", f32, 2, 3), 2) }, []string{"axis 2 is out of range for rank 2"}},
		{"Concat dims", func(g *builder.Graph) { Concat(1, in(g, "a", f32, 2, 3), in(g, "b", f32, 4, 3)) },
			[]string{"inputs_1 is float32[4,3]: dimension 0 is 4, want 2"}},
		{"Concat rank", func(g *builder.Graph) { Concat(0, in(g, "a", f32, 2, 3), in(g, "b", f32, 3)) }, []string{"ranks must match"}},
		{"Concat axis", func(g *builder.Graph) { Concat(2, in(g, "a", f32, 2, 3)) }, []string{"axis 2 is out of range"}},
		{"Gather indices float", func(g *builder.Graph) { Gather(in(g, "d", f32, 5, 2), in(g, "i", f32, 3), 0) },
			[]string{"indices is float32[3], want one of int32, int64"}},
		{"Gather axis", func(g *builder.Graph) { Gather(in(g, "d", f32, 5, 2), in(g, "i", i64, 3), -3) }, []string{"axis -3 is out of range for rank 2"}},
		{"Gemm rank", func(g *builder.Graph) { Gemm(in(g, "a", f32, 2, 3, 4), in(g, "b", f32, 4, 2), nil, GemmOpts{}) }, []string{"A is float32[2,3,4], want rank 2"}},
		{"Gemm C", func(g *builder.Graph) {
			Gemm(in(g, "a", f32, 2, 3), in(g, "b", f32, 3, 4), in(g, "c", f32, 3), GemmOpts{})
		},
			[]string{"C is float32[3], which does not broadcast to the result [2,4]"}},
		{"Reshape count", func(g *builder.Graph) { Reshape(in(g, "x", f32, 2, 3), ConstInt64s(g, 4, 2), ReshapeOpts{}) }, []string{"element counts differ"}},
		{"Reshape two -1", func(g *builder.Graph) { Reshape(in(g, "x", f32, 2, 3), ConstInt64s(g, -1, -1), ReshapeOpts{}) }, []string{"more than one -1"}},
		{"Transpose perm", func(g *builder.Graph) { Transpose(in(g, "x", f32, 2, 3), []int64{0, 0}) }, []string{"not a permutation"}},
		{"Squeeze non-1", func(g *builder.Graph) { Squeeze(in(g, "x", f32, 2, 3), ConstInt64s(g, 0)) }, []string{"cannot squeeze axis 0: dimension is 2, not 1"}},
		{"Unsqueeze axis", func(g *builder.Graph) { Unsqueeze(in(g, "x", f32, 2), ConstInt64s(g, 3)) }, []string{"axis 3 is out of range for rank 2"}},
		{"Split sum", func(g *builder.Graph) { Split(in(g, "x", f32, 5), ConstInt64s(g, 2, 2), 0, 2) }, []string{"adds up to 4 but axis 0 of input is 5"}},
		{"Split count", func(g *builder.Graph) { Split(in(g, "x", f32, 5), nil, 0, 2) }, []string{"does not split into 2 equal parts"}},
		{"Slice lengths", func(g *builder.Graph) {
			Slice(in(g, "x", f32, 5), ConstInt64s(g, 0), ConstInt64s(g, 1, 2), nil, nil)
		}, []string{"starts has 1 entries but ends has 2"}},
		{"Where cond", func(g *builder.Graph) { Where(in(g, "c", f32, 2), in(g, "x", f32, 2), in(g, "y", f32, 2)) }, []string{"condition is float32[2], want bool"}},
		{"ReduceSum axis", func(g *builder.Graph) { ReduceSum(in(g, "x", f32, 2), ConstInt64s(g, 1), ReduceSumOpts{}) }, []string{"axis 1 is out of range for rank 1"}},
		{"ReduceMax dup axes", func(g *builder.Graph) { ReduceMax(in(g, "x", f32, 2, 3), ReduceOpts{Axes: []int64{1, -1}}) }, []string{"appears twice"}},
		{"ArgMax axis", func(g *builder.Graph) { ArgMax(in(g, "x", f32, 2), 1, ArgOpts{}) }, []string{"axis 1 is out of range for rank 1"}},
		{"Cast to", func(g *builder.Graph) { Cast(in(g, "x", f32, 2), builder.Complex64) }, []string{"cannot cast to complex64"}},
		{"Range mixed", func(g *builder.Graph) { Range(ScalarInt64(g, 0), ScalarFloat(g, 1), ScalarInt64(g, 1)) }, []string{"element types must match"}},
		{"Expand", func(g *builder.Graph) { Expand(in(g, "x", f32, 3), ConstInt64s(g, 2, 4)) }, []string{"cannot broadcast"}},
		{"nil input", func(g *builder.Graph) { Add(in(g, "x", f32, 3), nil) }, []string{"input B is required but nil"}},
		{"LSTM W dims", func(g *builder.Graph) {
			LSTM(in(g, "x", f32, 5, 2, 10), in(g, "w", f32, 1, 80, 11), in(g, "r", f32, 1, 80, 20), LSTMOpts{})
		}, []string{"W is float32[1,80,11], want [1,80,10]"}},
		{"LSTM direction", func(g *builder.Graph) {
			LSTM(in(g, "x", f32, 5, 2, 10), in(g, "w", f32, 1, 80, 10), in(g, "r", f32, 1, 80, 20), LSTMOpts{RNNOpts: RNNOpts{Direction: "sideways"}})
		}, []string{`direction "sideways" is not one of`}},
		{"LSTM elem", func(g *builder.Graph) {
			LSTM(in(g, "x", i64, 5, 2, 10), in(g, "w", i64, 1, 80, 10), in(g, "r", i64, 1, 80, 20), LSTMOpts{})
		}, []string{"X is int64[5,2,10], want one of float16, float32, float64"}},
		{"LSTM initial_h batch", func(g *builder.Graph) {
			LSTM(in(g, "x", f32, 5, 2, 10), in(g, "w", f32, 1, 80, 10), in(g, "r", f32, 1, 80, 20),
				LSTMOpts{RNNOpts: RNNOpts{InitialH: in(g, "h", f32, 1, 3, 20)}})
		}, []string{"initial_h is float32[1,3,20], want [1,2,20]"}},
		{"LSTM activations", func(g *builder.Graph) {
			LSTM(in(g, "x", f32, 5, 2, 10), in(g, "w", f32, 1, 80, 10), in(g, "r", f32, 1, 80, 20),
				LSTMOpts{RNNOpts: RNNOpts{Activations: []string{"Sigmoid", "Tanh"}}})
		}, []string{"want 3 (3 per direction)"}},
		{"GRU W gates", func(g *builder.Graph) {
			GRU(in(g, "x", f32, 5, 2, 10), in(g, "w", f32, 1, 80, 10), in(g, "r", f32, 1, 60, 20), GRUOpts{})
		}, []string{"W is float32[1,80,10], want [1,60,10]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantBuildError(t, c.build, c.want...) })
	}
}

// wantBuildError builds a graph with build and checks that it records an
// error containing each of want.
func wantBuildError(t *testing.T, build func(g *builder.Graph), want ...string) {
	t.Helper()
	g := builder.New("g")
	build(g)
	err := g.Err()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestConstantsAreKnown(t *testing.T) {
	g := builder.New("g")
	c := ConstInt64s(g, 3, -1)
	if c.Producer() == nil || c.Producer().OpType != "Constant" {
		t.Fatal("ConstInt64s must add a Constant node")
	}
	vals, ok := constInts(c)
	if !ok || len(vals) != 2 || vals[0] != 3 || vals[1] != -1 {
		t.Errorf("constant contents = %v, %v", vals, ok)
	}
	s := Shape(in(g, "x", f32, 2, 5), ShapeOpts{Start: 1})
	if vals, ok := constInts(s); !ok || len(vals) != 1 || vals[0] != 5 {
		t.Errorf("Shape of a static value should be known: %v %v", vals, ok)
	}
	if Shape(in(g, "y", f32, "b", 5), ShapeOpts{}).Const() != nil {
		t.Error("Shape of a symbolic value is not a build-time constant")
	}
}

func TestAttributesOnlyWhenNotDefault(t *testing.T) {
	g := builder.New("g")
	x := in(g, "x", f32, 2, 3)
	cases := []struct {
		v    *builder.Value
		want string
	}{
		{Softmax(x, -1), ""},
		{Softmax(x, 0), "axis=0"},
		{Gather(x, in(g, "i", i64, 1), 0), ""},
		{ArgMax(x, 1, ArgOpts{NoKeepDims: true, SelectLastIndex: true}), "axis=1 keepdims=0 select_last_index=1"},
		{Gemm(x, x, nil, GemmOpts{TransB: true, Beta: Float(0)}), "beta=0 transB=1"},
		{Concat(0, x, x), "axis=0"},
		{Shape(x, ShapeOpts{End: Int(0)}), "end=0"},
	}
	for i, c := range cases {
		var got []string
		for _, a := range c.v.Producer().Attrs {
			got = append(got, a.String())
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("case %d (%s): attributes %q, want %q", i, c.v.Producer().OpType, s, c.want)
		}
	}
	if g.Err() != nil {
		t.Fatal(g.Err())
	}
}

// TestRecurrentOptionalElemTypes feeds each optional input of LSTM and GRU
// with the wrong element type: the error names that input (it used to be an
// index out of range panic, names and values having drifted apart).
func TestRecurrentOptionalElemTypes(t *testing.T) {
	const want = "X is float32[5,2,10] but %s is float64%s: element types must match"
	f64 := builder.Double
	x := func(g *builder.Graph) *builder.Value { return in(g, "x", f32, 5, 2, 10) }
	// lstm and gru build the layer with float32 W and R unless opts is nil.
	lstm := func(opts func(g *builder.Graph) LSTMOpts) func(g *builder.Graph) {
		return func(g *builder.Graph) { LSTM(x(g), in(g, "w", f32, 1, 80, 10), in(g, "r", f32, 1, 80, 20), opts(g)) }
	}
	gru := func(opts func(g *builder.Graph) GRUOpts) func(g *builder.Graph) {
		return func(g *builder.Graph) { GRU(x(g), in(g, "w", f32, 1, 60, 10), in(g, "r", f32, 1, 60, 20), opts(g)) }
	}
	cases := []struct {
		name, input, dims string
		build             func(g *builder.Graph)
	}{
		{"LSTM W", "W", "[1,80,10]", func(g *builder.Graph) { LSTM(x(g), in(g, "w", f64, 1, 80, 10), in(g, "r", f32, 1, 80, 20), LSTMOpts{}) }},
		{"LSTM R", "R", "[1,80,20]", func(g *builder.Graph) { LSTM(x(g), in(g, "w", f32, 1, 80, 10), in(g, "r", f64, 1, 80, 20), LSTMOpts{}) }},
		{"LSTM B", "B", "[1,160]", lstm(func(g *builder.Graph) LSTMOpts { return LSTMOpts{RNNOpts: RNNOpts{B: in(g, "b", f64, 1, 160)}} })},
		{"LSTM initial_h", "initial_h", "[1,2,20]", lstm(func(g *builder.Graph) LSTMOpts {
			return LSTMOpts{RNNOpts: RNNOpts{InitialH: in(g, "h", f64, 1, 2, 20)}}
		})},
		{"LSTM initial_c", "initial_c", "[1,2,20]", lstm(func(g *builder.Graph) LSTMOpts { return LSTMOpts{InitialC: in(g, "c", f64, 1, 2, 20)} })},
		{"LSTM P", "P", "[1,60]", lstm(func(g *builder.Graph) LSTMOpts { return LSTMOpts{P: in(g, "p", f64, 1, 60)} })},
		{"GRU B", "B", "[1,120]", gru(func(g *builder.Graph) GRUOpts { return GRUOpts{RNNOpts: RNNOpts{B: in(g, "b", f64, 1, 120)}} })},
		{"GRU initial_h", "initial_h", "[1,2,20]", gru(func(g *builder.Graph) GRUOpts {
			return GRUOpts{RNNOpts: RNNOpts{InitialH: in(g, "h", f64, 1, 2, 20)}}
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantBuildError(t, c.build, fmt.Sprintf(want, c.input, c.dims)) })
	}
}

// TestReshapeOverflow: element counts that wrap around int64 (2^32 x 2^32 =
// 0) made Reshape infer a [0] shape for -1; they are an error now.
func TestReshapeOverflow(t *testing.T) {
	const want = "shape [4294967296 4294967296] has more than 9223372036854775807 elements"
	wantBuildError(t, func(g *builder.Graph) { Reshape(in(g, "x", f32, 1<<32, 1<<32), ConstInt64s(g, -1), ReshapeOpts{}) }, want)
	wantBuildError(t, func(g *builder.Graph) {
		Reshape(in(g, "x", f32, "b", 1<<32, 1<<32), ConstInt64s(g, 4, -1), ReshapeOpts{})
	}, want)
}
