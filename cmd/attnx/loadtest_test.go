package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--batching", "sometimes"}, `--batching "sometimes": want on, off or both, comma-separated`},
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

// TestLoadtestCommand runs a short load test against a server it starts,
// with batching on and off, and checks the table: one row per client count
// and mode, no failures, one-row batches with batching off and decoder
// steps counted with it on.
func TestLoadtestCommand(t *testing.T) {
	model := translateTestModel(t)
	inputs := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(inputs, []byte("abc\tignored\nbad\nfee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server runs in a process of its own: this test binary, as the
	// helper process of TestBadInputMissingORT runs the CLI.
	defer func(old func([]string) (*exec.Cmd, error)) { serveCommand = old }(serveCommand)
	serveCommand = func(args []string) (*exec.Cmd, error) {
		argv, err := json.Marshal(args)
		cmd := exec.Command(os.Args[0], "-test.run=^TestBadInputHelperProcess$")
		cmd.Env = append(os.Environ(), "ATTNX_BADINPUT_ARGS="+string(argv))
		return cmd, err
	}
	code, out, errs := attnx("loadtest", "--model", model, "--inputs", inputs, "--clients", "1,2", "--batching", "on,off", "--duration", "200ms", "--warmup", "0s", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	row := regexp.MustCompile(`(?m)^ +(\d+)  (on|off) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +0 +([\d.]+) +([\d.]+)$`)
	rows := row.FindAllStringSubmatch(out, -1)
	if len(rows) != 4 {
		t.Fatalf("table:\n%s", out)
	}
	for i, want := range [][2]string{{"1", "on"}, {"2", "on"}, {"1", "off"}, {"2", "off"}} {
		if rows[i][1] != want[0] || rows[i][2] != want[1] || rows[i][3] == "0.0" {
			t.Errorf("row %d: %q, want %s clients, batching %s, some sentences:\n%s", i, rows[i][0], want[0], want[1], out)
		}
	}
	for _, re := range []string{`(?m)^   1 clients, batching off: <=1: \d+$`, `(?m)^   2 clients, batching on: <=\d: \d+`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("batch sizes: no line matches %s:\n%s", re, out)
		}
	}
	for _, r := range rows {
		if r[7] == "0.00" || r[8] == "0.00" {
			t.Errorf("no CPU time measured (server %s, clients %s):\n%s", r[7], r[8], out)
		}
	}
	if strings.Contains(out, "first failure") {
		t.Errorf("failures:\n%s", out)
	}
}
