package serve

import (
	"math"
	"strings"
	"testing"
)

// TestWriteLoadTable: a run's row, the batches by bucket in increasing
// bounds with +Inf as "more", and the first failure.
func TestWriteLoadTable(t *testing.T) {
	runs := []LoadRun{{Mode: "on", Round: 1, LoadResult: &LoadResult{Clients: 8, Failed: 1, FirstError: "HTTP 503", SentencesPerSec: 123.45, TokensPerSec: 1000, P50: 1.5, P99: 9.25,
		BatchRows: map[float64]uint64{8: 3, 1: 2, math.Inf(1): 1}}}}
	var b strings.Builder
	if err := WriteLoadTable(&b, runs, SummarizeLoad(runs), 1); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"      8  on             1        123.5     1000.0      1.50      9.25         1",
		"   8 clients, batching on, round 1: <=1: 2, <=8: 3, <=more: 1\n",
		"first failure at 8 clients, batching on, round 1: HTTP 503\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "medians over") {
		t.Errorf("one round has no medians:\n%s", b.String())
	}
}
