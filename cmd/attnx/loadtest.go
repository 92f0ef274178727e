package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/attnx/attnx/internal/cpuprofile"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/serve"
	"github.com/attnx/attnx/translate"
)

func init() {
	commandDocs["loadtest"] = `
Measures attnx serve under load: for each number of clients (--clients),
that many concurrent clients send single-sentence requests, one after
another, for --warmup and then --duration, and the command reports
sentences/s, output tokens/s and latency p50/p99, and the batch sizes the
server decoded (from its /metrics).

With --model DIR it starts attnx serve on 127.0.0.1, in a process of its
own, once per --batching mode and stops it with SIGTERM after the runs;
with --url it loads a server already running on this machine (loopback
addresses only). The modes: on (continuous batching), off (each request
decoded alone by its own Translator call, with the engine attnx serve
chooses: greedy.onnx when the model has it), off-1t (off with one ONNX
Runtime thread per session, the thread count on gets for small models, so
that both are measured alike), off-steps and off-loop (alone, with that
engine). The started server is ready when its /readyz answers 200.

A machine shared with other work slows some runs more than others:
--repeat N runs the modes N times, in turn, and then reports the median of
each figure and, per number of clients, how many times the sentences/s of
batching on each mode without it is (the median, lowest and highest over
the N rounds, each round's modes run one after the other).
The table gives the CPU cores the server and the clients used while
measuring: both share this machine. Sentences come from --inputs FILE, one
per line (a tab ends the sentence, so testdata/demo/heldout.txt works).`
}

func runLoadtest(args []string) (err error) {
	fs := newFlagSet("loadtest")
	model := fs.String("model", "", "start attnx serve on 127.0.0.1 with the model directory `DIR`")
	target := fs.String("url", "", "load a running server at `URL` instead (loopback only)")
	inputs := fs.String("inputs", "", "sentences, one per line (text before a tab) from `FILE`")
	clients := fs.String("clients", "1,8,32,64", "numbers of concurrent clients, comma-separated")
	batching := fs.String("batching", "on,off", "modes of the started server, comma-separated: on (continuous batching), off (each request decoded alone, the server's default engine), off-1t (off with one ONNX Runtime thread per session, as on gets for small models), off-steps, off-loop (alone, with that engine)")
	repeat := fs.Int("repeat", 1, "run the modes `N` times, in turn, and report medians and speedups")
	duration := fs.Duration("duration", 5*time.Second, "measured time per run")
	warmup := fs.Duration("warmup", time.Second, "unmeasured time before each run")
	threads := fs.Int("threads", 0, "intra-op threads of the started server (0: attnx serve's default)")
	backend := backendFlag(fs)
	maxConc := fs.Int("max-concurrent", serve.DefaultMaxConcurrent, "requests decoding at once in the started server with batching off")
	maxRows := fs.Int("max-batch-rows", serve.DefaultMaxBatchRows, "rows decoded together in the started server with batching on")
	jsonOut := fs.Bool("json", false, "write the results as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the clients (this process) to `FILE`; the server started runs in a process of its own: profile a server with attnx serve --pprof and --url")
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
	for i, m := range modes {
		modes[i] = strings.TrimSpace(m)
		if _, ok := loadModes[modes[i]]; !ok || slices.Contains(modes[:i], modes[i]) {
			return &usageError{fmt.Sprintf("--batching %q: want on, off, off-1t, off-steps or off-loop, each at most once, comma-separated", *batching)}
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
	case checkBackend(*backend, "") != nil:
		return checkBackend(*backend, "")
	case *repeat < 1 || *repeat > 100:
		return &usageError{fmt.Sprintf("--repeat %d: want 1 to 100", *repeat)}
	}
	if *target != "" {
		if err := checkLoopback(*target); err != nil {
			return &usageError{err.Error()}
		}
		modes = []string{"running"}
	}
	sentences, err := readSentences(*inputs)
	if err != nil {
		return err
	}

	if *cpuProfile != "" {
		prof, err := cpuprofile.Start(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			if cerr := prof.Stop(); err == nil && cerr != nil {
				err = fmt.Errorf("--cpuprofile: %w", cerr)
			}
		}()
	}
	ctx := context.Background()
	var runs []serve.LoadRun
	for round := 1; round <= *repeat; round++ {
		for _, mode := range modes {
			base, stop := *target, func() error { return nil }
			if *model != "" {
				base, stop, err = startLoadServer(append([]string{
					"--model", "m=" + *model, "--threads", strconv.Itoa(*threads), "--backend", onnxrun.BackendFor(*backend, ""),
					"--max-concurrent", strconv.Itoa(*maxConc), "--max-batch-rows", strconv.Itoa(*maxRows), "--max-queue", "1024",
				}, loadModes[mode]...))
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
				runs = append(runs, serve.LoadRun{Mode: mode, Round: round, LoadResult: r})
				if !*jsonOut {
					fmt.Fprintf(stderr, "attnx loadtest: round %d of %d, batching %s, %d clients: %.1f sentences/s\n", round, *repeat, mode, n, r.SentencesPerSec)
				}
			}
			if err := stop(); err != nil {
				return err
			}
		}
	}
	sum := serve.SummarizeLoad(runs)
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if *repeat == 1 {
			return enc.Encode(runs)
		}
		return enc.Encode(struct {
			Runs    []serve.LoadRun    `json:"runs"`
			Summary *serve.LoadSummary `json:"summary"`
		}{runs, sum})
	}
	printLoadTable(runs, sum, *repeat)
	return nil
}

// loadModes are the --batching modes: the attnx serve flags of each.
var loadModes = map[string][]string{
	"on":  {"--batching", "on"},
	"off": {"--batching", "off"},
	// off-1t is off with the one intra-op thread that batching on gets
	// for small models (serve.BatchingThreads): off's default of one per
	// core runs many sessions at once on few cores. The later --threads
	// wins over the one startLoadServer passes.
	"off-1t":    {"--batching", "off", "--threads", "1"},
	"off-steps": {"--batching", "off", "--engine", translate.EngineSteps},
	"off-loop":  {"--batching", "off", "--engine", translate.EngineLoop},
}

func printLoadTable(rows []serve.LoadRun, sum *serve.LoadSummary, repeat int) {
	header := func(first string) {
		fmt.Fprintf(stdout, "%7s  %-9s  %-5s  %11s  %9s  %8s  %8s  %8s  %10s  %10s\n", "clients", "batching", first, "sentences/s", "tokens/s", "p50 ms", "p99 ms", "failed", "server cpu", "client cpu")
	}
	header("round")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%7d  %-9s  %5d  %11.1f  %9.1f  %8.2f  %8.2f  %8d  %10.2f  %10.2f\n", r.Clients, r.Mode, r.Round, r.SentencesPerSec, r.TokensPerSec, r.P50, r.P99, r.Failed, r.ServerCPU, r.ClientCPU)
	}
	fmt.Fprintf(stdout, "(cpu: cores used while measuring, the server's from its /metrics, the clients' by this process)\n")
	if repeat > 1 {
		fmt.Fprintf(stdout, "\nmedians over %d rounds:\n", repeat)
		header("runs")
		for _, m := range sum.Medians {
			fmt.Fprintf(stdout, "%7d  %-9s  %5d  %11.1f  %9.1f  %8.2f  %8.2f  %8d  %10.2f  %10.2f\n", m.Clients, m.Mode, m.Runs, m.SentencesPerSec, m.TokensPerSec, m.P50, m.P99, m.Failed, m.ServerCPU, m.ClientCPU)
		}
	}
	if len(sum.Speedups) > 0 {
		fmt.Fprintf(stdout, "\nsentences/s with batching on, over each mode without it (per round; median, lowest, highest):\n")
		for _, sp := range sum.Speedups {
			fmt.Fprintf(stdout, "  %2d clients, on / %s: %.2fx (%.2f-%.2fx over %d rounds); p99 %.2f ms on, %.2f ms %s\n",
				sp.Clients, sp.Against, sp.Median, sp.Min, sp.Max, sp.Rounds, sp.P99On, sp.P99Against, sp.Against)
		}
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
		fmt.Fprintf(stdout, "  %2d clients, batching %s, round %d: %s\n", r.Clients, r.Mode, r.Round, strings.Join(parts, ", "))
	}
	for _, r := range rows {
		if r.FirstError != "" {
			fmt.Fprintf(stdout, "first failure at %d clients, batching %s, round %d: %s\n", r.Clients, r.Mode, r.Round, r.FirstError)
		}
	}
}

// serveCommand returns the command that runs attnx with args: this
// executable. The tests replace it, their executable being the test
// binary.
var serveCommand = func(args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting attnx serve: %w", err)
	}
	return exec.Command(exe, args...), nil
}

// startLoadServer runs `attnx serve` with args on a loopback port, in a
// process of its own (so that its CPU time is its own, and the clients do
// not share its Go runtime), and returns its URL once it is ready. stop
// sends SIGTERM and waits for it to exit 0.
func startLoadServer(args []string) (base string, stop func() error, err error) {
	p, err := startServe(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), 2*time.Minute)
	if err != nil {
		return "", nil, err
	}
	return p.url, p.stop, nil
}

// serveProcess is `attnx serve` running in a process of its own, its log
// (stderr) read as it comes.
type serveProcess struct {
	cmd    *exec.Cmd
	url    string        // from "listening on URL"
	logged chan struct{} // closed once the log has been read to its end
	mu     sync.Mutex
	log    strings.Builder
}

// startServe runs attnx with args (a serve command line, through
// serveCommand) and returns once its log says it is ready, or fails with
// the log when it exits first or is not ready within timeout.
func startServe(args []string, timeout time.Duration) (*serveProcess, error) {
	cmd, err := serveCommand(args)
	if err != nil {
		return nil, err
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting attnx serve: %w", err)
	}
	p := &serveProcess{cmd: cmd, logged: make(chan struct{})}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The log gives the address (the port is the system's choice); ready
	// is what /readyz says, polled once the address is known.
	deadline := time.After(timeout)
	var poll <-chan time.Time
	client := &http.Client{Timeout: 5 * time.Second}
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				werr := cmd.Wait() // the log has been read to its end
				return nil, fmt.Errorf("attnx serve exited before it was ready (%v):\n%s", werr, p.Log())
			}
			if _, url, found := strings.Cut(l, "listening on "); found && poll == nil {
				p.url = url
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				poll = tick.C
			}
		case <-poll:
			if resp, err := client.Get(p.url + serve.PathReady); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ready = resp.StatusCode == http.StatusOK
			}
		case <-deadline:
			cmd.Process.Kill()
			for range lines {
			}
			cmd.Wait()
			return nil, fmt.Errorf("attnx serve was not ready within %s:\n%s", timeout, p.Log())
		}
	}
	// Keep reading the log, which Wait needs read to its end.
	go func() {
		for range lines {
		}
		close(p.logged)
	}()
	return p, nil
}

// Log returns what the process has logged so far.
func (p *serveProcess) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// wait waits for the process to exit, after reading its log to the end,
// and fails unless it exited 0.
func (p *serveProcess) wait() error {
	<-p.logged
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("attnx serve after SIGTERM: %v (want exit 0):\n%s", err, p.Log())
	}
	return nil
}

// stop sends SIGTERM and waits for the process to exit 0.
func (p *serveProcess) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping attnx serve: %w", err)
	}
	return p.wait()
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
