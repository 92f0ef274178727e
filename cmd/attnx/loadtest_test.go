package main

import (
	"os"
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
		{[]string{"loadtest", "--model", "m", "--inputs", "f", "--batching", "sometimes"}, `--batching "sometimes": only "off" is available`},
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

// TestLoadtestCommand runs a short load test against a server it starts
// and checks the table: one row per client count, no failures, and one-row
// batches (batching off).
func TestLoadtestCommand(t *testing.T) {
	model := translateTestModel(t)
	inputs := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(inputs, []byte("abc\tignored\nbad\nfee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := attnx("loadtest", "--model", model, "--inputs", inputs, "--clients", "1,2", "--duration", "200ms", "--warmup", "0s", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	row := regexp.MustCompile(`(?m)^ +(\d+)  off +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +0$`)
	rows := row.FindAllStringSubmatch(out, -1)
	if len(rows) != 2 || rows[0][1] != "1" || rows[1][1] != "2" {
		t.Fatalf("table:\n%s", out)
	}
	for _, r := range rows {
		if r[2] == "0.0" {
			t.Errorf("no sentences translated at %s clients:\n%s", r[1], out)
		}
	}
	if !regexp.MustCompile(`(?m)^   1 clients, batching off: <=1: \d+$`).MatchString(out) || strings.Contains(out, "first failure") {
		t.Errorf("batch sizes or failures:\n%s", out)
	}
}
