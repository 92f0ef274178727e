package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attnx/attnx/serve"
)

func init() {
	commandDocs["loadtest"] = `
Measures attnx serve under load: for each number of clients (--clients),
that many concurrent clients send single-sentence requests, one after
another, for --warmup and then --duration, and the command reports
sentences/s, output tokens/s and latency p50/p99, and the batch sizes the
server decoded (from its /metrics).

With --model DIR it starts the server itself on 127.0.0.1, once per
--batching mode; with --url it loads a server already running on this
machine (loopback addresses only). Sentences come from --inputs FILE, one
per line (a tab ends the sentence, so testdata/demo/heldout.txt works).`
}

func runLoadtest(args []string) error {
	fs := newFlagSet("loadtest")
	model := fs.String("model", "", "start attnx serve on 127.0.0.1 with the model directory `DIR`")
	target := fs.String("url", "", "load a running server at `URL` instead (loopback only)")
	inputs := fs.String("inputs", "", "sentences, one per line (text before a tab) from `FILE`")
	clients := fs.String("clients", "1,8,32,64", "numbers of concurrent clients, comma-separated")
	batching := fs.String("batching", "on,off", "batching modes of the started server, comma-separated (on: continuous batching; off: each request decoded alone)")
	duration := fs.Duration("duration", 5*time.Second, "measured time per run")
	warmup := fs.Duration("warmup", time.Second, "unmeasured time before each run")
	threads := fs.Int("threads", 0, "ONNX Runtime intra-op threads of the started server (0: one per core)")
	maxConc := fs.Int("max-concurrent", serve.DefaultMaxConcurrent, "requests decoding at once in the started server with batching off")
	maxRows := fs.Int("max-batch-rows", serve.DefaultMaxBatchRows, "rows decoded together in the started server with batching on")
	jsonOut := fs.Bool("json", false, "write the results as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	var counts []int
	for _, f := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return &usageError{fmt.Sprintf("--clients %q: want numbers from 1 to 1024, comma-separated", *clients)}
		}
		counts = append(counts, n)
	}
	modes := strings.Split(*batching, ",")
	for _, m := range modes {
		if m != "on" && m != "off" {
			return &usageError{fmt.Sprintf("--batching %q: want on, off or both, comma-separated", *batching)}
		}
	}
	switch {
	case (*model == "") == (*target == ""):
		return &usageError{"give --model DIR (start a server) or --url URL (a running one)"}
	case *inputs == "":
		return &usageError{"--inputs FILE is required"}
	case *duration <= 0 || *warmup < 0:
		return &usageError{"--duration must be positive and --warmup not negative"}
	case *threads < 0 || *maxConc < 1 || *maxRows < 1:
		return &usageError{"--threads must not be negative, --max-concurrent and --max-batch-rows must be positive"}
	}
	if *target != "" {
		if err := checkLoopback(*target); err != nil {
			return &usageError{err.Error()}
		}
		modes = []string{"(running server)"}
	}
	sentences, err := readSentences(*inputs)
	if err != nil {
		return err
	}

	ctx := context.Background()
	var results []loadRow
	for _, mode := range modes {
		base, stop := *target, func() error { return nil }
		if *model != "" {
			base, stop, err = startLoadServer(ctx, serve.Config{
				Models:  []serve.ModelDir{{Name: "m", Dir: *model}},
				Threads: *threads, Batching: mode == "on", MaxConcurrent: *maxConc, MaxBatchRows: *maxRows, MaxQueue: 1024,
			})
			if err != nil {
				return err
			}
		}
		for _, n := range counts {
			r, err := serve.RunLoad(ctx, serve.LoadConfig{URL: base, Sentences: sentences, Clients: n, Warmup: *warmup, Duration: *duration})
			if err != nil {
				stop()
				return err
			}
			results = append(results, loadRow{Batching: mode, LoadResult: r})
			if !*jsonOut {
				fmt.Fprintf(stderr, "attnx loadtest: batching %s, %d clients: %.1f sentences/s\n", mode, n, r.SentencesPerSec)
			}
		}
		if err := stop(); err != nil {
			return err
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	printLoadTable(results)
	return nil
}

// loadRow is one run of the report.
type loadRow struct {
	Batching string `json:"batching"`
	*serve.LoadResult
}

func printLoadTable(rows []loadRow) {
	fmt.Fprintf(stdout, "%7s  %-8s  %11s  %9s  %8s  %8s  %8s\n", "clients", "batching", "sentences/s", "tokens/s", "p50 ms", "p99 ms", "failed")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%7d  %-8s  %11.1f  %9.1f  %8.2f  %8.2f  %8d\n", r.Clients, r.Batching, r.SentencesPerSec, r.TokensPerSec, r.P50, r.P99, r.Failed)
	}
	fmt.Fprintf(stdout, "\nbatches decoded by rows per batch (server /metrics, upper bounds):\n")
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
		fmt.Fprintf(stdout, "  %2d clients, batching %s: %s\n", r.Clients, r.Batching, strings.Join(parts, ", "))
	}
	for _, r := range rows {
		if r.FirstError != "" {
			fmt.Fprintf(stdout, "first failure at %d clients, batching %s: %s\n", r.Clients, r.Batching, r.FirstError)
		}
	}
}

// startLoadServer serves cfg on a loopback port until stop is called.
func startLoadServer(ctx context.Context, cfg serve.Config) (base string, stop func() error, err error) {
	srv, err := serve.New(cfg)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	stop = func() error {
		cancel()
		return <-served
	}
	base = "http://" + ln.Addr().String()
	for !srv.Ready() {
		select {
		case err := <-served:
			cancel()
			return "", nil, err
		case <-time.After(10 * time.Millisecond):
		}
	}
	return base, stop, nil
}

// checkLoopback accepts only URLs of this machine.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: want http://HOST:PORT", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--url %q: the load test only loads servers on this machine (localhost, 127.0.0.1, ::1)", raw)
}

// readSentences reads one sentence per line, the text before a tab.
func readSentences(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--inputs: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s, _, _ := strings.Cut(sc.Text(), "\t")
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--inputs %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--inputs %s: no sentences", path)
	}
	return out, nil
}
