package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

func TestServeUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		err  string
	}{
		{[]string{"serve"}, "--model DIR is required"},
		{[]string{"serve", "--model", "a b=dir"}, `--model "a b=dir": model name "a b" must be letters, digits`},
		{[]string{"serve", "--model", "m="}, `--model "m=": no directory (want NAME=DIR or DIR)`},
		{[]string{"serve", "--model", "dir", "extra"}, `unexpected argument "extra" (models are given with --model DIR)`},
		{[]string{"serve", "--model", "dir", "--max-queue", "0"}, "--max-queue: must be positive"},
		{[]string{"serve", "--model", "dir", "--max-body", "-1"}, "--max-body: must be positive"},
		{[]string{"serve", "--model", "dir", "--batching", "off", "--engine", "fast"}, `--engine "fast": want steps or loop`},
		{[]string{"serve", "--model", "dir", "--engine", "loop"}, "--engine loop: the engine is chosen with --batching off only (continuous batching runs the steps engine)"},
		{[]string{"serve", "--model", "dir", "--batching", "yes"}, `--batching "yes": want on or off`},
		{[]string{"serve", "--model", "dir", "--max-batch-rows", "0"}, "--max-batch-rows: must be positive"},
		{[]string{"serve", "--model", "dir", "--device", "tpu"}, `--device "tpu": want cpu, cuda or auto`},
		{[]string{"serve", "--model", "dir", "--threads", "-2"}, "--threads -2: must not be negative"},
		{[]string{"serve", "--model", "dir", "--rules", "moses"}, `--rules "moses": want "spec", "opennmt", "joeynmt" or "fairseq"`},
	}
	for _, c := range cases {
		code, _, errs := attnx(c.args...)
		if code != 2 || !strings.Contains(errs, c.err) || !strings.Contains(errs, "Run 'attnx help serve' for usage.") {
			t.Errorf("attnx %q: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.err)
		}
	}
	// The model directories are checked before the address is taken: a
	// busy port (here one this test holds) does not hide a missing model.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	code, _, errs := attnx("serve", "--addr", busy.Addr().String(), "--model", "a=/no/such/dir", "--model", "b=/no/such/dir")
	if code != 1 || !strings.Contains(errs, `attnx serve: model "a" (/no/such/dir): translate: model directory /no/such/dir does not exist`) {
		t.Errorf("missing model: exit %d, stderr %q", code, errs)
	}
	code, _, errs = attnx("serve", "--model", "x=/a", "--model", "x=/b")
	if code != 1 || !strings.Contains(errs, `two models are named "x"`) {
		t.Errorf("duplicate names: exit %d, stderr %q", code, errs)
	}
}

// TestServeSIGTERMDuringLoad runs `attnx serve` in a subprocess, with
// batching on (the scheduler) and off, loads it with 8 clients sending
// long requests on fresh connections, and sends SIGTERM while several are
// in flight; the clients stop sending then. Each request is answered 200
// (those accepted by the kernel but not yet by the server too, thanks to
// --drain-delay), and the process exits 0.
func TestServeSIGTERMDuringLoad(t *testing.T) {
	model := translateTestModel(t)
	for _, batching := range []string{"on", "off"} {
		t.Run("batching "+batching, func(t *testing.T) { sigtermDuringLoad(t, model, batching) })
	}
}

func sigtermDuringLoad(t *testing.T, model, batching string) {
	serveFromTestBinary(t)
	p, err := startServe([]string{"serve", "--model", "m=" + model, "--addr", "127.0.0.1:0", "--threads", "1", "--drain-delay", "500ms", "--batching", batching}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Kill()
	url := p.url

	// Long requests: random weights rarely emit EOS, so each of the 16
	// rows runs to max_len.
	inputs := make([]string, 16)
	for i := range inputs {
		inputs[i] = fmt.Sprintf(`"%s"`, strings.Repeat("abcdefg", 1+i%3))
	}
	body := `{"inputs": [` + strings.Join(inputs, ",") + `], "max_len": 400}`
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	type result struct {
		code     int
		err      error
		answered time.Time
	}
	var mu sync.Mutex
	var results []result
	var stop sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for c := 0; c < 8; c++ {
		stop.Add(1)
		go func() {
			defer stop.Done()
			for ctx.Err() == nil {
				resp, err := client.Post(url+"/v1/translate", "application/json", strings.NewReader(body))
				r := result{err: err}
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					r.code, r.err = resp.StatusCode, err
				}
				r.answered = time.Now()
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}
	// Signal once at least 4 requests are in flight, as the server counts.
	deadline := time.Now().Add(60 * time.Second)
	for inFlight(t, client, url) < 4 {
		if time.Now().After(deadline) {
			t.Fatal("never 4 requests in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cancel()
	stop.Wait()
	if err := p.wait(); err != nil {
		t.Fatal(err)
	}
	log := p.Log()
	after := 0
	for _, r := range results {
		switch {
		case r.err == nil && r.code == 200:
			if r.answered.After(signalled) {
				after++
			}
		default:
			t.Errorf("request answered %d, error %v", r.code, r.err)
		}
	}
	if after < 4 {
		t.Errorf("%d requests answered 200 after SIGTERM, want the 4 or more in flight", after)
	}
	for _, want := range []string{"shutting down: draining for 500ms", "shutting down: finishing requests in flight", "attnx serve: stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	t.Logf("%d requests, %d answered after SIGTERM; log:\n%s", len(results), after, log)
}

// inFlight reads attnx_serve_requests_in_flight from /metrics.
func inFlight(t *testing.T, client *http.Client, url string) int {
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var n float64
		if _, err := fmt.Sscanf(sc.Text(), "attnx_serve_requests_in_flight %g", &n); err == nil {
			return int(n)
		}
	}
	return 0
}

// TestServeDeployArgs parses the arguments the Dockerfile's CMD and the
// Kubernetes Deployment give attnx serve with its own flag parser.
func TestServeDeployArgs(t *testing.T) {
	var dep appsv1.Deployment
	data, err := os.ReadFile("../../deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &dep); err != nil {
		t.Fatal(err)
	}
	docker, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var cmd []string
	for _, line := range strings.Split(string(docker), "\n") {
		if rest, ok := strings.CutPrefix(line, "CMD "); ok {
			if err := json.Unmarshal([]byte(rest), &cmd); err != nil {
				t.Fatalf("Dockerfile %s: %v", line, err)
			}
		}
	}
	for where, args := range map[string][]string{
		"deploy/deployment.yaml": dep.Spec.Template.Spec.Containers[0].Args,
		"Dockerfile CMD":         cmd,
	} {
		if len(args) == 0 || args[0] != "serve" {
			t.Errorf("%s: %q does not run attnx serve", where, args)
			continue
		}
		cfg, addr, err := serveConfig(args[1:])
		if err != nil || addr != ":8080" || len(cfg.Models) != 1 || cfg.Models[0].Name != "dates" {
			t.Errorf("%s: attnx %q: %v (address %q, models %v)", where, args, err, addr, cfg.Models)
		}
	}
}

// TestServeStalledClientAndSecondSignal runs attnx serve in a process of
// its own. A client that sends its headers and one byte of body does not
// hold a SIGTERM: the server answers it 503 and exits 0 (it used to wait
// out the 25 s shutdown timeout and exit 1). A second SIGTERM during a
// long drain exits at once, status 1, saying so.
func TestServeStalledClientAndSecondSignal(t *testing.T) {
	model := translateTestModel(t)
	serveFromTestBinary(t)
	p, err := startServe([]string{"serve", "--model", "m=" + model, "--addr", "127.0.0.1:0", "--threads", "1"}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Kill()
	addr := strings.TrimPrefix(p.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /v1/translate HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// The request is counted in flight once its handler runs.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(60 * time.Second)
	for inFlight(t, client, p.url) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the stalled request never reached its handler")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || strings.TrimSpace(line) != "HTTP/1.1 503 Service Unavailable" {
		t.Errorf("the stalled client was answered %q, %v", line, err)
	}

	p, err = startServe([]string{"serve", "--model", "m=" + model, "--addr", "127.0.0.1:0", "--threads", "1", "--drain-delay", "10m"}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Kill()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for !strings.Contains(p.Log(), "draining for 10m0s") {
		if time.Now().After(deadline) {
			t.Fatalf("no drain in the log:\n%s", p.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.logged
	err = p.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("after a second SIGTERM: %v, want exit status 1", err)
	}
	if !strings.Contains(p.Log(), "second terminated during shutdown: exiting without waiting for requests in flight") {
		t.Errorf("log lacks the second signal:\n%s", p.Log())
	}
}

// TestServeDecodingFlags: the decoding flags become the server's defaults
// for requests that leave the fields out; bad ones are usage errors.
func TestServeDecodingFlags(t *testing.T) {
	cfg, _, err := serveConfig([]string{"--model", "m", "--beam", "5", "--n-best", "2", "--length-penalty", "1", "--length-penalty-form", "wu", "--min-len", "3", "--replace-unk"})
	d := cfg.Decoding
	if err != nil || *d.Beam != 5 || *d.NBest != 2 || *d.LengthPenalty != 1 || !*d.PenaltyWu || *d.MinLen != 3 || !*d.ReplaceUnk {
		t.Fatalf("%+v, %v", d, err)
	}
	// Flags left out leave the models' attnx.json defaults.
	cfg, _, err = serveConfig([]string{"--model", "m", "--min-len", "2"})
	if d := cfg.Decoding; err != nil || d.Beam != nil || d.NBest != nil || d.LengthPenalty != nil || d.PenaltyWu != nil || d.ReplaceUnk != nil || *d.MinLen != 2 {
		t.Fatalf("only --min-len given: %+v, %v", d, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--length-penalty-form", "avg"}, `--length-penalty-form "avg": want power or wu`},
		{[]string{"--beam", "2", "--n-best", "3"}, "--n-best 3: want 1 <= N <= --beam 2"},
	} {
		if _, _, err := serveConfig(append([]string{"--model", "m"}, c.args...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
