package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestLoadtestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		err  string
	}{
		{[]string{"loadtest", "--inputs", "f"}, "give --model DIR (start a server) or --url URL (a running one)"},
		{[]string{"loadtest", "--model", "m", "--url", "http://127.0.0.1:1", "--inputs", "f"}, "give --model DIR (start a server) or --url URL"},
		{[]string{"loadtest", "--model", "m"}, "--inputs FILE is required"},
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--clients", "1,x"}, `--clients "1,x": want numbers from 1 to 1024`},
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--clients", "0"}, `--clients "0": want numbers from 1 to 1024`},
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--batching", "sometimes"}, `--batching "sometimes": want on, off, off-1t, off-steps or off-loop, each at most once, comma-separated`},
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--batching", "on,off,on"}, `--batching "on,off,on": want on, off, off-1t, off-steps or off-loop, each at most once`},
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--repeat", "0"}, "--repeat 0: want 1 to 100"},
		{[]string{"loadtest", "--url", "http://example.com:8080", "--inputs", "f"}, `--url "http://example.com:8080": the load test only loads servers on this machine`},
		{[]string{"loadtest", "--url", "ftp://127.0.0.1", "--inputs", "f"}, `--url "ftp://127.0.0.1": want http://HOST:PORT`},
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--duration", "0s"}, "--duration must be positive"},
	}
	for _, c := range cases {
		code, _, errs := attnx(c.args...)
		if code != 2 || !strings.Contains(errs, c.err) {
			t.Errorf("attnx %q: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.err)
		}
	}
}

// serveFromTestBinary makes serveCommand, until the test ends, run the
// server in a process of its own that is this test binary: the helper
// process of TestBadInputMissingORT runs any command line of the CLI.
func serveFromTestBinary(t *testing.T) {
	old := serveCommand
	t.Cleanup(func() { serveCommand = old })
	serveCommand = func(args []string) (*exec.Cmd, error) {
		argv, err := json.Marshal(args)
		cmd := exec.Command(os.Args[0], "-test.run=^TestBadInputHelperProcess$")
		cmd.Env = append(os.Environ(), "ATTNX_BADINPUT_ARGS="+string(argv))
		return cmd, err
	}
}

// TestLoadtestCommand runs a short load test against a server it starts,
// twice over, with batching on and off (the test model has no greedy.onnx,
// so off runs the steps engine), and checks the report: one row per round,
// client count and mode, no failures, one-row batches with batching off
// and decoder steps counted with it on; the medians of the two rounds; and
// the speedup of on over off at each client count, which must agree with
// the rows.
func TestLoadtestCommand(t *testing.T) {
	model := translateTestModel(t)
	inputs := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(inputs, []byte("abc\tignored\nbad\nfee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serveFromTestBinary(t)
	code, out, errs := attnx("loadtest", "--model", model, "--inputs", inputs, "--clients", "1,2", "--batching", "on,off", "--repeat", "2", "--duration", "200ms", "--warmup", "0s", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	runs, medians, _ := strings.Cut(out, "medians over 2 rounds:")
	row := regexp.MustCompile(`(?m)^ +(\d+)  (on|off) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +0 +([\d.]+) +([\d.]+)$`)
	rows := row.FindAllStringSubmatch(runs, -1)
	if len(rows) != 8 {
		t.Fatalf("want 8 runs, got %d; report:\n%s", len(rows), out)
	}
	perSec := map[string]float64{} // "clients mode round"
	for i, r := range rows {
		clients, mode, round := []string{"1", "2"}[i%2], []string{"on", "off"}[i/2%2], []string{"1", "2"}[i/4]
		if r[1] != clients || r[2] != mode || r[3] != round || r[4] == "0.0" {
			t.Errorf("run %d: %q, want %s clients, batching %s, round %s, some sentences:\n%s", i, r[0], clients, mode, round, out)
		}
		if r[8] == "0.00" || r[9] == "0.00" {
			t.Errorf("no CPU time measured (server %s, clients %s):\n%s", r[8], r[9], out)
		}
		perSec[clients+" "+mode+" "+round] = atof(t, r[4])
	}
	if n := len(row.FindAllString(medians, -1)); n != 4 {
		t.Errorf("want 4 median rows (runs column 2), got %d:\n%s", n, out)
	}
	speedup := regexp.MustCompile(`(?m)^ +(\d) clients, on / off: ([\d.]+)x \(([\d.]+)-([\d.]+)x over 2 rounds\); p99 [\d.]+ ms on, [\d.]+ ms off$`)
	sp := speedup.FindAllStringSubmatch(out, -1)
	if len(sp) != 2 {
		t.Fatalf("want a speedup line per client count:\n%s", out)
	}
	for _, m := range sp {
		r1 := perSec[m[1]+" on 1"] / perSec[m[1]+" off 1"]
		r2 := perSec[m[1]+" on 2"] / perSec[m[1]+" off 2"]
		lo, hi := min(r1, r2), max(r1, r2)
		// The table rounds sentences/s to 0.1 and ratios to 0.01.
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"median", atof(t, m[2]), (r1 + r2) / 2}, {"lowest", atof(t, m[3]), lo}, {"highest", atof(t, m[4]), hi}} {
			if math.Abs(c.got-c.want) > 0.011+0.01*c.want {
				t.Errorf("%s clients: %s speedup %.2f, the rows give %.3f:\n%s", m[1], c.name, c.got, c.want, out)
			}
		}
	}
	for _, re := range []string{`(?m)^   1 clients, batching off, round 2: <=1: \d+$`, `(?m)^   2 clients, batching on, round 1: <=\d: \d+`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("batch sizes: no line matches %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "first failure") {
		t.Errorf("failures:\n%s", out)
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
