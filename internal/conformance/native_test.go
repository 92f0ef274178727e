package conformance

import (
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxeval"
)

// attnxOps are the operators attnx's own graphs use (encoder, decoder,
// greedy and beam graphs, every architecture and precision) that the ONNX
// backend test data covers. com.microsoft.MatMulNBits has no case there:
// onnxeval's parity test checks it against ONNX Runtime.
var attnxOps = []string{
	"Add", "And", "ArgMax", "Cast", "Concat", "Constant", "DequantizeLinear", "Div", "DynamicQuantizeLinear",
	"Equal", "Expand", "GRU", "Gather", "GatherElements", "Gemm", "Greater", "Identity", "LSTM", "Less",
	"LogSoftmax", "Loop", "MatMul", "MatMulInteger", "Max", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pow",
	"QLinearMatMul", "QuantizeLinear", "Range", "ReduceMax", "ReduceMin", "ReduceSum", "Relu", "Reshape",
	"Shape", "Sigmoid", "Slice", "Softmax", "Split", "Squeeze", "Sub", "Tanh", "TopK", "Transpose",
	"Unsqueeze", "Where", "Abs",
}

// TestNativeBackendConformance runs every case of the ONNX backend test
// data through the native evaluator: no case it runs may fail; every
// operator attnx's graphs use must pass at least one case, and each of
// those operators' cases pass unless another operator in them is missing
// or the evaluator refuses a variant (float16 tensors, layout=1).
func TestNativeBackendConformance(t *testing.T) {
	testenv.Backend(t, "node")
	cases, err := DiscoverDefault()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(cases, Options{Backend: "go", Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		if c.Status == Failed {
			t.Errorf("%s failed at %s: %s", c.Name, c.Stage, c.Reason)
		}
	}
	if rep.Backend != "go" || rep.Passed+rep.Failed+rep.ExpectedFailures+rep.Unsupported+rep.NotImplemented != rep.Total || rep.Total < 1000 {
		t.Errorf("report: backend %q, %d cases: %d passed, %d failed, %d expected, %d unsupported, %d not implemented",
			rep.Backend, rep.Total, rep.Passed, rep.Failed, rep.ExpectedFailures, rep.Unsupported, rep.NotImplemented)
	}
	per := map[string]OpCount{}
	for _, k := range rep.Ops {
		per[k.Op] = k
	}
	for _, op := range attnxOps {
		k, ok := per[op]
		if !onnxeval.Implements("", op) {
			t.Errorf("%s: attnx's graphs use it and the native evaluator does not implement it", op)
			continue
		}
		if !ok || k.Passed == 0 || k.Failed > 0 || k.Passed+k.Expected+k.Unsupported+k.Missing != k.Cases {
			t.Errorf("%s: %+v; want at least one passed case and none failed", op, k)
		}
	}
	t.Logf("native backend: %d cases, %d passed, %d unsupported, %d not implemented; %d operators counted", rep.Total, rep.Passed, rep.Unsupported, rep.NotImplemented, len(rep.Ops))
}
