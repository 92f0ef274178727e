package main

import (
	"errors"
	"fmt"

	"github.com/attnx/attnx/translate"
	"github.com/attnx/attnx/verify"
)

// srcVerify is attnx verify --src: a user's test set decoded with the
// exported graphs and with PyTorch, chunk by chunk (verify.CheckTestSet).
type srcVerify struct {
	src   string
	refs  []string
	chunk int
	steps int // 0: each sentence's own limit
}

// runVerifySrc reads the test set and its references and prints
// verify.CheckTestSet's outcome.
func runVerifySrc(opt verify.Options, sv srcVerify, asJSON bool) error {
	lines, err := readSegments(sv.src)
	if err != nil {
		return fmt.Errorf("--src: %w", err)
	}
	ts := verify.TestSet{Name: sv.src, Lines: lines, Chunk: sv.chunk, Steps: sv.steps}
	for _, r := range sv.refs {
		l, err := readSegments(r)
		if err != nil {
			return fmt.Errorf("--ref: %w", err)
		}
		if len(l) != len(lines) {
			return fmt.Errorf("--ref %s has %d lines and --src %s has %d: a reference needs one line per source", r, len(l), sv.src, len(lines))
		}
		ts.References = append(ts.References, l)
	}
	// The Translator decodes as attnx translate does by default (the
	// model's own settings): its output limits are the ones both sides
	// decode each sentence with.
	tr, err := translate.Open(opt.ModelDir, translate.Options{Backend: opt.Backend, Threads: 1, Engine: translate.EngineSteps})
	if err != nil {
		return translateCLIError(err)
	}
	defer tr.Close()
	var bar *progress
	ts.Progress = func(done, total int) {
		if bar == nil {
			bar = newProgress(total, "verify --src")
		}
		bar.Set(done, "verify --src")
	}
	out, err := verify.CheckTestSet(tr, opt, ts)
	bar.Finish()
	var line *verify.LineError
	switch {
	case errors.As(err, &line):
		return translateCLIError(fmt.Errorf("--src %w", err))
	case errors.Is(err, verify.ErrEmptyTestSet):
		return fmt.Errorf("--src %w", err)
	case err != nil:
		return err
	}
	if asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		out.WriteText(stdout, opt.Checkpoint.String())
	}
	if !out.OK {
		return &exitError{exitFailure}
	}
	return nil
}
