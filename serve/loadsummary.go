package serve

import (
	"slices"
)

// LoadRun is one load-test run of a report: a server mode (such as "on"
// or "off"), the round it belongs to (modes are run in turn, round after
// round), and what it measured.
type LoadRun struct {
	Mode  string `json:"batching"`
	Round int    `json:"round"`
	*LoadResult
}

// LoadSummary condenses the runs of several rounds.
type LoadSummary struct {
	// Medians has one row per number of clients and mode, in the order
	// the runs first show them.
	Medians []LoadMedian `json:"medians"`
	// Speedups compares mode "on" with every other mode, per number of
	// clients; empty without an "on" run.
	Speedups []LoadSpeedup `json:"speedups,omitempty"`
}

// LoadMedian is the median of each figure over the runs of one mode and
// number of clients (of an even count, the mean of the middle two);
// Failed is the sum.
type LoadMedian struct {
	Mode                                                          string `json:"batching"`
	Clients, Runs, Failed                                         int
	SentencesPerSec, TokensPerSec, P50, P99, ServerCPU, ClientCPU float64
}

// LoadSpeedup is how many times the sentences/s of mode "on" those of
// mode Against are, at one number of clients. Each round gives one
// ratio, from its two runs (run one after the other, so that a slow spell
// of a shared machine tends to touch both); Median, Min and Max are over
// the rounds that have both. P99On and P99Against are the median p99
// latencies, in milliseconds.
type LoadSpeedup struct {
	Clients, Rounds   int
	Against           string
	Median, Min, Max  float64
	P99On, P99Against float64
}

// SummarizeLoad returns the medians and speedups of runs.
func SummarizeLoad(runs []LoadRun) *LoadSummary {
	type key struct {
		mode    string
		clients int
	}
	var order []key
	groups := map[key][]LoadRun{}
	for _, r := range runs {
		k := key{r.Mode, r.Clients}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	sum := &LoadSummary{}
	p99 := map[key]float64{}
	for _, k := range order {
		g := groups[k]
		m := LoadMedian{Mode: k.mode, Clients: k.clients, Runs: len(g)}
		pick := func(f func(*LoadResult) float64) float64 {
			v := make([]float64, len(g))
			for i, r := range g {
				v[i] = f(r.LoadResult)
			}
			return median(v)
		}
		m.SentencesPerSec = pick(func(r *LoadResult) float64 { return r.SentencesPerSec })
		m.TokensPerSec = pick(func(r *LoadResult) float64 { return r.TokensPerSec })
		m.P50 = pick(func(r *LoadResult) float64 { return r.P50 })
		m.P99 = pick(func(r *LoadResult) float64 { return r.P99 })
		m.ServerCPU = pick(func(r *LoadResult) float64 { return r.ServerCPU })
		m.ClientCPU = pick(func(r *LoadResult) float64 { return r.ClientCPU })
		for _, r := range g {
			m.Failed += r.Failed
		}
		p99[k] = m.P99
		sum.Medians = append(sum.Medians, m)
	}
	for _, k := range order {
		if k.mode == "on" {
			continue
		}
		on, ok := groups[key{"on", k.clients}]
		if !ok {
			continue
		}
		var ratios []float64
		for _, a := range groups[k] {
			for _, b := range on {
				if b.Round == a.Round && a.SentencesPerSec > 0 {
					ratios = append(ratios, b.SentencesPerSec/a.SentencesPerSec)
				}
			}
		}
		if len(ratios) == 0 {
			continue
		}
		sum.Speedups = append(sum.Speedups, LoadSpeedup{
			Clients: k.clients, Against: k.mode, Rounds: len(ratios),
			Median: median(ratios), Min: slices.Min(ratios), Max: slices.Max(ratios),
			P99On: p99[key{"on", k.clients}], P99Against: p99[k],
		})
	}
	return sum
}

// median returns the median of v (of an even count, the mean of the
// middle two); v is sorted in place.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
