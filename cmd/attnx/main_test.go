package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// attnx runs the CLI in-process and returns its exit status and output.
func attnx(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	stdout, stderr = &out, &errb
	defer func() { stdout, stderr = os.Stdout, os.Stderr }()
	code := run(args)
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{nil, 2, "", "Commands:"},
		{[]string{"help"}, 0, "conformance  run the ONNX backend test data", ""},
		{[]string{"help", "conformance"}, 0, "Usage: attnx conformance [flags] [dir...]", ""},
		{[]string{"conformance", "-h"}, 0, "-expected", ""},
		{[]string{"help", "nope"}, 2, "", `unknown command "nope"`},
		{[]string{"nope"}, 2, "", `attnx: unknown command "nope"`},
		{[]string{"conformance", "-bogus"}, 2, "", "unknown flag: -bogus (arguments that begin with - go after --)\nRun 'attnx help conformance' for usage."},
		{[]string{"conformance", "-workers", "0"}, 2, "", "-workers must be at least 1"},
		{[]string{"conformance", "-run", "("}, 2, "", "-run: error parsing regexp"},
		{[]string{"conformance", "/no/such/dir"}, 1, "", "attnx conformance: conformance: stat /no/such/dir"},
	}
	for _, c := range cases {
		code, out, errs := attnx(c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
			t.Errorf("attnx %q: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", c.args, code, out, errs, c.code, c.out, c.err)
		}
		if strings.Contains(errs, "goroutine ") {
			t.Errorf("attnx %q printed a stack trace", c.args)
		}
	}
}

func TestPanicIsReportedCleanly(t *testing.T) {
	saved := commands
	defer func() { commands = saved }()
	commands = append(commands, command{name: "boom", summary: "panics", run: func([]string) error { panic("kaboom") }},
		command{name: "fail", summary: "fails", run: func([]string) error { return errors.New("it broke") }})
	code, _, errs := attnx("boom")
	if code != 1 || !strings.Contains(errs, "attnx: internal error: kaboom") || strings.Contains(errs, "goroutine") {
		t.Errorf("panic: exit %d, stderr %q", code, errs)
	}
	code, _, errs = attnx("fail")
	if code != 1 || errs != "attnx fail: it broke\n" {
		t.Errorf("error: exit %d, stderr %q", code, errs)
	}
}
