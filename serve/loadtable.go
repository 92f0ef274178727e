package serve

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// WriteLoadTable writes a load test's runs as a table for a reader: one
// row per run, then with several rounds (repeat) each mode's medians, the
// speedups of batching, the batches' rows by bucket and each run's first
// failure.
func WriteLoadTable(out io.Writer, rows []LoadRun, sum *LoadSummary, repeat int) error {
	w := bufio.NewWriter(out)
	header := func(first string) {
		fmt.Fprintf(w, "%7s  %-9s  %-5s  %11s  %9s  %8s  %8s  %8s  %10s  %10s\n", "clients", "batching", first, "sentences/s", "tokens/s", "p50 ms", "p99 ms", "failed", "server cpu", "client cpu")
	}
	header("round")
	for _, r := range rows {
		fmt.Fprintf(w, "%7d  %-9s  %5d  %11.1f  %9.1f  %8.2f  %8.2f  %8d  %10.2f  %10.2f\n", r.Clients, r.Mode, r.Round, r.SentencesPerSec, r.TokensPerSec, r.P50, r.P99, r.Failed, r.ServerCPU, r.ClientCPU)
	}
	fmt.Fprintf(w, "(cpu: cores used while measuring, the server's from its /metrics, the clients' by this process)\n")
	if repeat > 1 {
		fmt.Fprintf(w, "\nmedians over %d rounds:\n", repeat)
		header("runs")
		for _, m := range sum.Medians {
			fmt.Fprintf(w, "%7d  %-9s  %5d  %11.1f  %9.1f  %8.2f  %8.2f  %8d  %10.2f  %10.2f\n", m.Clients, m.Mode, m.Runs, m.SentencesPerSec, m.TokensPerSec, m.P50, m.P99, m.Failed, m.ServerCPU, m.ClientCPU)
		}
	}
	if len(sum.Speedups) > 0 {
		fmt.Fprintf(w, "\nsentences/s with batching on, over each mode without it (per round; median, lowest, highest):\n")
		for _, sp := range sum.Speedups {
			fmt.Fprintf(w, "  %2d clients, on / %s: %.2fx (%.2f-%.2fx over %d rounds); p99 %.2f ms on, %.2f ms %s\n",
				sp.Clients, sp.Against, sp.Median, sp.Min, sp.Max, sp.Rounds, sp.P99On, sp.P99Against, sp.Against)
		}
	}
	fmt.Fprintf(w, "\nbatches decoded by rows per batch (server /metrics, upper bounds):\n")
	for _, r := range rows {
		var bounds []float64
		for le := range r.BatchRows {
			bounds = append(bounds, le)
		}
		slices.Sort(bounds)
		var parts []string
		for _, le := range bounds {
			name := strconv.FormatFloat(le, 'f', -1, 64)
			if math.IsInf(le, 1) {
				name = "more"
			}
			parts = append(parts, fmt.Sprintf("<=%s: %d", name, r.BatchRows[le]))
		}
		fmt.Fprintf(w, "  %2d clients, batching %s, round %d: %s\n", r.Clients, r.Mode, r.Round, strings.Join(parts, ", "))
	}
	for _, r := range rows {
		if r.FirstError != "" {
			fmt.Fprintf(w, "first failure at %d clients, batching %s, round %d: %s\n", r.Clients, r.Mode, r.Round, r.FirstError)
		}
	}
	return w.Flush()
}
