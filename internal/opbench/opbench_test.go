package opbench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/ortest"
)

// TestRunSmall measures small instances of every group for two rounds and
// checks the report's arithmetic: the reference's speed-up is 1 and its
// deviation 0, float32 variants deviate by rounding only, reduced ones by
// more than that but within their quantization error, and reduced weights
// are smaller.
func TestRunSmall(t *testing.T) {
	ortest.Require(t)
	var cases []Case
	cases = append(cases, ClassifierCases(2, 64, 300, 1)...)
	cases = append(cases, CellCases("LSTM", 2, 32, 32, 2)...)
	cases = append(cases, CellCases("GRU", 1, 32, 32, 3)...)
	rep, err := Run(cases, Options{Rounds: 2, RoundTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(cases) {
		t.Fatalf("%d results for %d cases", len(rep.Results), len(cases))
	}
	refBytes := map[string]int{}
	for i, r := range rep.Results {
		if r.Group != cases[i].Group || r.Name != cases[i].Name {
			t.Fatalf("result %d is %s / %s, want %s / %s", i, r.Group, r.Name, cases[i].Group, cases[i].Name)
		}
		if r.MedianMs <= 0 || r.MinMs <= 0 || r.MinMs > r.MedianMs {
			t.Errorf("%s / %s: median %v min %v", r.Group, r.Name, r.MedianMs, r.MinMs)
		}
		if r.RefMaxAbs <= 0 {
			t.Errorf("%s / %s: reference scale %v", r.Group, r.Name, r.RefMaxAbs)
		}
		switch {
		case i == 0 || rep.Results[i-1].Group != r.Group:
			refBytes[r.Group] = r.Bytes
			if r.Speedup != 1 || r.MaxAbsDev != 0 {
				t.Errorf("%s: reference speed-up %v deviation %v, want 1 and 0", r.Name, r.Speedup, r.MaxAbsDev)
			}
		case strings.HasPrefix(r.Name, "fp32"):
			if r.MaxAbsDev > 1e-5*max(1, r.RefMaxAbs) {
				t.Errorf("%s / %s: float32 deviates by %v", r.Group, r.Name, r.MaxAbsDev)
			}
		default:
			if r.MaxAbsDev == 0 || r.MaxAbsDev > 0.25*r.RefMaxAbs {
				t.Errorf("%s / %s: deviation %v (reference max %v), want a quantization error", r.Group, r.Name, r.MaxAbsDev, r.RefMaxAbs)
			}
			if r.Bytes >= refBytes[r.Group] {
				t.Errorf("%s / %s: %d bytes, not fewer than float32's %d", r.Group, r.Name, r.Bytes, refBytes[r.Group])
			}
		}
	}
	var md, js bytes.Buffer
	rep.Markdown(&md)
	for _, want := range []string{"### classifier B=2 [2,64]x[64,300]", "### LSTM cell B=2 input 32 hidden 32", "| fp32 GRU operator |", "4-bit MatMulNBits block 32 acc 4, two products"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	if err := rep.JSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != len(rep.Results) || back.ORT == "" {
		t.Errorf("JSON round trip: %v, %d results, ORT %q", err, len(back.Results), back.ORT)
	}
}
