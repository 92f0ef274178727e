// Command opbench measures the candidate graphs of a reduced-precision
// decoder step on ONNX Runtime (see package internal/opbench) and prints a
// Markdown table, and optionally JSON.
//
//	go run ./internal/opbench/cmd/opbench [--rounds 15] [--threads 1] [--batch 1,32] [--only LSTM] [--json out.json]
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/attnx/attnx/internal/opbench"
	flag "github.com/spf13/pflag"
)

func main() {
	rounds := flag.Int("rounds", 15, "timed rounds per case (the median is reported)")
	roundTime := flag.Duration("round-time", 20*time.Millisecond, "time each case runs per round")
	threads := flag.Int("threads", 1, "ONNX Runtime intra-op threads")
	batches := flag.String("batch", "1,32", "comma-separated batch sizes")
	hidden := flag.Int("hidden", 256, "hidden size H (the classifier's input is 2H, Luong's)")
	vocab := flag.Int("vocab", 10000, "target vocabulary size")
	only := flag.String("only", "", "measure only groups containing this text (classifier, LSTM, GRU)")
	jsonOut := flag.String("json", "", "also write the report as JSON to this file")
	flag.Parse()
	if err := run(*rounds, *roundTime, *threads, *batches, *hidden, *vocab, *only, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "opbench:", err)
		os.Exit(1)
	}
}

func run(rounds int, roundTime time.Duration, threads int, batches string, hidden, vocab int, only, jsonOut string) error {
	var cases []opbench.Case
	for _, f := range strings.Split(batches, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b <= 0 {
			return fmt.Errorf("-batch: %q is not a positive batch size", f)
		}
		cases = append(cases, opbench.ClassifierCases(b, 2*hidden, vocab, 1)...)
		cases = append(cases, opbench.CellCases("LSTM", b, hidden, hidden, 2)...)
		cases = append(cases, opbench.CellCases("LSTM", b, 2*hidden, hidden, 3)...)
		cases = append(cases, opbench.CellCases("GRU", b, hidden, hidden, 4)...)
	}
	if only != "" {
		var kept []opbench.Case
		for _, c := range cases {
			if strings.Contains(c.Group, only) {
				kept = append(kept, c)
			}
		}
		cases = kept
	}
	rep, err := opbench.Run(cases, opbench.Options{Rounds: rounds, RoundTime: roundTime, Threads: threads, Progress: os.Stderr})
	if err != nil {
		return err
	}
	rep.Markdown(os.Stdout)
	if jsonOut != "" {
		f, err := os.Create(jsonOut)
		if err != nil {
			return err
		}
		if err := rep.JSON(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return nil
}
