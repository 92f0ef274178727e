package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	runs, err := loadRounds(loadPlan{model: *model, target: *target, threads: *threads, backend: *backend, maxConc: *maxConc, maxRows: *maxRows,
		counts: counts, modes: modes, sentences: sentences, warmup: *warmup, duration: *duration, repeat: *repeat, quiet: *jsonOut})
	if err != nil {
		return err
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
	return serve.WriteLoadTable(stdout, runs, sum, *repeat)
}

// loadPlan is what loadtest measures: the rounds of each mode (a server
// started per mode, or the running one) at each number of clients.
type loadPlan struct {
	model, target, backend    string
	threads, maxConc, maxRows int
	counts                    []int
	modes                     []string
	sentences                 []string
	warmup, duration          time.Duration
	repeat                    int
	quiet                     bool // no progress lines on stderr
}

// loadRounds runs the plan's rounds.
func loadRounds(p loadPlan) ([]serve.LoadRun, error) {
	ctx := context.Background()
	var runs []serve.LoadRun
	for round := 1; round <= p.repeat; round++ {
		for _, mode := range p.modes {
			base, stop := p.target, func() error { return nil }
			if p.model != "" {
				var err error
				base, stop, err = startLoadServer(append([]string{
					"--model", "m=" + p.model, "--threads", strconv.Itoa(p.threads), "--backend", onnxrun.BackendFor(p.backend, ""),
					"--max-concurrent", strconv.Itoa(p.maxConc), "--max-batch-rows", strconv.Itoa(p.maxRows), "--max-queue", "1024",
				}, loadModes[mode]...))
				if err != nil {
					return nil, err
				}
			}
			for _, n := range p.counts {
				r, err := serve.RunLoad(ctx, serve.LoadConfig{URL: base, Sentences: p.sentences, Clients: n, Warmup: p.warmup, Duration: p.duration})
				if err != nil {
					stop()
					return nil, err
				}
				runs = append(runs, serve.LoadRun{Mode: mode, Round: round, LoadResult: r})
				if !p.quiet {
					fmt.Fprintf(stderr, "attnx loadtest: round %d of %d, batching %s, %d clients: %.1f sentences/s\n", round, p.repeat, mode, n, r.SentencesPerSec)
				}
			}
			if err := stop(); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
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
