package verify

import (
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// TestRunAndCompareEdges: zero decoder steps compare the encoder alone; a
// reference with fewer tokens than the steps run, or a cell state the graphs
// lack, is an error, not a panic.
func TestRunAndCompareEdges(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	f := fixtures.List(t)[1]
	_, enc, dec := openModel(t, f.Path(t, "checkpoint.pt"))
	d := fixtures.Load(t, f.Path(t, ""))
	ids := sourceTensor(t, d)

	tr, err := Run(enc, dec, ids, d.Lengths, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(tr, d.Expected, Tolerance)
	if err != nil || len(rep.Rows) != 3 || !rep.OK {
		t.Fatalf("zero steps: %v, %+v", err, rep)
	}

	tr, err = Run(enc, dec, ids, d.Lengths, d.StepInputs[:2])
	if err != nil {
		t.Fatal(err)
	}
	short := map[string]*builder.Tensor{}
	for k, v := range d.Expected {
		short[k] = v
	}
	short["tokens"] = builder.Int64Tensor([]int64{1, 1}, []int64{4})
	if _, err := Compare(tr, short, Tolerance); err == nil || !strings.Contains(err.Error(), "fewer than the 2 steps") {
		t.Errorf("short reference tokens: %v", err)
	}
	noCell := *tr
	noCell.StateNames, noCell.States = []string{"hidden"}, map[string]*onnxrun.Tensor{"hidden": tr.States["hidden"]}
	if _, err := Compare(&noCell, d.Expected, Tolerance); err == nil || !strings.Contains(err.Error(), "cell state") {
		t.Errorf("graphs without cell against a reference with one: %v", err)
	}

	bad := append([]int64(nil), d.Lengths...)
	bad[0] = 0
	if _, err := Run(enc, dec, ids, bad, nil); err == nil || !strings.Contains(err.Error(), "source_lengths[0] = 0") {
		t.Errorf("length 0: %v", err)
	}
	if _, err := Run(enc, dec, ids, d.Lengths, [][]int64{{1}}); err == nil || !strings.Contains(err.Error(), "1 input ids for a batch of") {
		t.Errorf("wrong step width: %v", err)
	}
}
