package main

import (
	"fmt"
	"regexp"
	"time"

	"github.com/attnx/attnx/internal/conformance"
)

func init() {
	commandDocs["conformance"] = `
Each case's model.onnx is loaded with package onnxfile, re-serialized and
checked to decode equal to the original, then run on the backend
(--backend: the native evaluator by default, ONNX Runtime with --backend
ort) on every test_data_set_N and compared with the expected outputs
(rtol 1e-3, atol 1e-7 for floats; exact for integers, bools and strings).

On the native backend, a case using an operator the evaluator lacks is
not-implemented, one using a variant it refuses is unsupported, and every
other case must pass; the report counts them by operator.

With --backend ort, cases that fail with ONNX Runtime itself, or that the Go binding cannot
run, are named in an expected-failure list with the stage at which they
fail (feed, load, run, compare) and why. The list is built in
(` + conformance.BuiltinListPath + `, made by running every case through
ONNX Runtime's Node.js binding: make conformance-expected); --expected
names another. Each case is reported as
  passed                every output matches
  failed                it errors or mismatches and is not on the list,
                        or fails at another stage than the list says
  expected-failure      on the list, and fails at that stage
  unexpectedly-passing  on the list, but passes: regenerate the list

Each dir is a case directory, a folder of cases or a folder of folders;
the default is the node, pytorch-converted, pytorch-operator and simple
folders of ` + conformance.DefaultRoot + ` (Debian's libonnx-testdata).

Exit status: 0 when no case failed and none is unexpectedly passing, 1
otherwise, 2 for usage errors.`
}

func runConformance(args []string) error {
	fs := newFlagSet("conformance")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	verbose := fs.BoolP("verbose", "v", false, "list every expected failure with its reason, and progress on stderr")
	workers := fs.Int("workers", 2, "cases to run in parallel")
	timeout := fs.Duration("timeout", 2*time.Minute, "time limit for one case")
	rtol := fs.Float64("rtol", 1e-3, "relative tolerance for floats")
	atol := fs.Float64("atol", 1e-7, "absolute tolerance for floats")
	expected := fs.String("expected", "", "expected-failure list to check against (default: the built-in "+conformance.BuiltinListPath+")")
	backend := backendFlag(fs)
	run := fs.String("run", "", "run only the cases whose name (such as node/test_abs) matches this regular expression")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *workers < 1 {
		return &usageError{fmt.Sprintf("-workers must be at least 1, got %d", *workers)}
	}
	if *timeout <= 0 {
		return &usageError{fmt.Sprintf("-timeout must be positive, got %v", *timeout)}
	}
	if *rtol < 0 || *atol < 0 || (*rtol == 0 && *atol == 0) {
		return &usageError{fmt.Sprintf("-rtol %g and -atol %g must be non-negative and not both zero", *rtol, *atol)}
	}
	if err := checkBackend(*backend, ""); err != nil {
		return err
	}
	opt := conformance.Options{Workers: *workers, Timeout: *timeout, RTol: *rtol, ATol: *atol, Backend: *backend}
	if *expected != "" {
		x, err := conformance.LoadExpectations(*expected)
		if err != nil {
			return err
		}
		opt.Expected = x
	}
	if *run != "" {
		re, err := regexp.Compile(*run)
		if err != nil {
			return &usageError{fmt.Sprintf("-run: %v", err)}
		}
		opt.Match = re
	}
	var cases []conformance.Case
	if fs.NArg() == 0 {
		cs, err := conformance.DiscoverDefault()
		if err != nil {
			return err
		}
		cases = cs
	}
	for _, dir := range fs.Args() {
		cs, err := conformance.Discover(dir)
		if err != nil {
			return err
		}
		cases = append(cases, cs...)
	}
	if *verbose {
		opt.Progress = func(done, total int, r conformance.CaseResult) {
			fmt.Fprintf(stderr, "[%d/%d] %s %s\n", done, total, r.Status, r.Name)
		}
	}
	rep, err := conformance.Run(cases, opt)
	if err != nil {
		return err
	}
	if rep.Total == 0 {
		return &usageError{"no case matches -run " + *run}
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout, *verbose)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return &exitError{exitFailure}
	}
	return nil
}
