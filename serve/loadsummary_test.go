package serve

import (
	"math"
	"reflect"
	"testing"
)

func TestSummarizeLoad(t *testing.T) {
	run := func(mode string, round, clients int, perSec, p99 float64, failed int) LoadRun {
		return LoadRun{Mode: mode, Round: round, LoadResult: &LoadResult{
			Clients: clients, SentencesPerSec: perSec, TokensPerSec: 10 * perSec, P50: p99 / 2, P99: p99,
			Failed: failed, ServerCPU: perSec / 1000, ClientCPU: perSec / 10000,
		}}
	}
	cases := []struct {
		name     string
		runs     []LoadRun
		medians  []LoadMedian
		speedups []LoadSpeedup
	}{{
		name: "one round",
		runs: []LoadRun{run("on", 1, 32, 6000, 12, 0), run("off", 1, 32, 1500, 48, 0)},
		medians: []LoadMedian{
			{Mode: "on", Clients: 32, Runs: 1, SentencesPerSec: 6000, TokensPerSec: 60000, P50: 6, P99: 12, ServerCPU: 6, ClientCPU: 0.6},
			{Mode: "off", Clients: 32, Runs: 1, SentencesPerSec: 1500, TokensPerSec: 15000, P50: 24, P99: 48, ServerCPU: 1.5, ClientCPU: 0.15},
		},
		speedups: []LoadSpeedup{{Clients: 32, Rounds: 1, Against: "off", Median: 4, Min: 4, Max: 4, P99On: 12, P99Against: 48}},
	}, {
		// Per-round ratios 4, 2 and 5: the median ratio is 4, not the
		// ratio of the medians (6000/2000 = 3).
		name: "three rounds, ratios per round",
		runs: []LoadRun{
			run("on", 1, 32, 6000, 10, 0), run("off", 1, 32, 1500, 40, 1),
			run("on", 2, 32, 4000, 14, 0), run("off", 2, 32, 2000, 50, 0),
			run("on", 3, 32, 7000, 12, 2), run("off", 3, 32, 1400, 45, 0),
		},
		medians: []LoadMedian{
			{Mode: "on", Clients: 32, Runs: 3, Failed: 2, SentencesPerSec: 6000, TokensPerSec: 60000, P50: 6, P99: 12, ServerCPU: 6, ClientCPU: 0.6},
			{Mode: "off", Clients: 32, Runs: 3, Failed: 1, SentencesPerSec: 1500, TokensPerSec: 15000, P50: 22.5, P99: 45, ServerCPU: 1.5, ClientCPU: 0.15},
		},
		speedups: []LoadSpeedup{{Clients: 32, Rounds: 3, Against: "off", Median: 4, Min: 2, Max: 5, P99On: 12, P99Against: 45}},
	}, {
		// Two rounds: medians are the means of the middle two; a round
		// without its "on" run gives no ratio; each mode and client count
		// is compared at its own client count.
		name: "even rounds, several modes and client counts",
		runs: []LoadRun{
			run("on", 1, 1, 1000, 2, 0), run("on", 1, 8, 3000, 6, 0), run("off", 1, 1, 800, 2, 0), run("off", 1, 8, 1000, 10, 0), run("off-steps", 1, 8, 2000, 8, 0),
			run("on", 2, 1, 1200, 4, 0), run("off", 2, 1, 800, 3, 0), run("off-steps", 2, 8, 1000, 12, 0),
		},
		medians: []LoadMedian{
			{Mode: "on", Clients: 1, Runs: 2, SentencesPerSec: 1100, TokensPerSec: 11000, P50: 1.5, P99: 3, ServerCPU: 1.1, ClientCPU: 0.11},
			{Mode: "on", Clients: 8, Runs: 1, SentencesPerSec: 3000, TokensPerSec: 30000, P50: 3, P99: 6, ServerCPU: 3, ClientCPU: 0.3},
			{Mode: "off", Clients: 1, Runs: 2, SentencesPerSec: 800, TokensPerSec: 8000, P50: 1.25, P99: 2.5, ServerCPU: 0.8, ClientCPU: 0.08},
			{Mode: "off", Clients: 8, Runs: 1, SentencesPerSec: 1000, TokensPerSec: 10000, P50: 5, P99: 10, ServerCPU: 1, ClientCPU: 0.1},
			{Mode: "off-steps", Clients: 8, Runs: 2, SentencesPerSec: 1500, TokensPerSec: 15000, P50: 5, P99: 10, ServerCPU: 1.5, ClientCPU: 0.15},
		},
		speedups: []LoadSpeedup{
			{Clients: 1, Rounds: 2, Against: "off", Median: 1.375, Min: 1.25, Max: 1.5, P99On: 3, P99Against: 2.5},
			{Clients: 8, Rounds: 1, Against: "off", Median: 3, Min: 3, Max: 3, P99On: 6, P99Against: 10},
			{Clients: 8, Rounds: 1, Against: "off-steps", Median: 1.5, Min: 1.5, Max: 1.5, P99On: 6, P99Against: 10},
		},
	}, {
		name:    "no on runs: medians only",
		runs:    []LoadRun{run("off", 1, 4, 900, 5, 0), run("off", 2, 4, 1100, 7, 0)},
		medians: []LoadMedian{{Mode: "off", Clients: 4, Runs: 2, SentencesPerSec: 1000, TokensPerSec: 10000, P50: 3, P99: 6, ServerCPU: 1, ClientCPU: 0.1}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sum := SummarizeLoad(c.runs)
			if len(sum.Medians) != len(c.medians) {
				t.Fatalf("medians %+v, want %+v", sum.Medians, c.medians)
			}
			for i, m := range sum.Medians {
				if !closeMedian(m, c.medians[i]) {
					t.Errorf("median %d: %+v, want %+v", i, m, c.medians[i])
				}
			}
			if !reflect.DeepEqual(sum.Speedups, c.speedups) {
				t.Errorf("speedups %+v, want %+v", sum.Speedups, c.speedups)
			}
		})
	}
}

// closeMedian compares medians, the floats within rounding.
func closeMedian(a, b LoadMedian) bool {
	fa := []float64{a.SentencesPerSec, a.TokensPerSec, a.P50, a.P99, a.ServerCPU, a.ClientCPU}
	fb := []float64{b.SentencesPerSec, b.TokensPerSec, b.P50, b.P99, b.ServerCPU, b.ClientCPU}
	for i := range fa {
		if math.Abs(fa[i]-fb[i]) > 1e-9*math.Max(1, math.Abs(fb[i])) {
			return false
		}
	}
	return a.Mode == b.Mode && a.Clients == b.Clients && a.Runs == b.Runs && a.Failed == b.Failed
}
