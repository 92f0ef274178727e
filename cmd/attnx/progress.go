package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a progress bar on stderr when stderr is a terminal and
// does nothing otherwise, so that logs and pipes stay clean. The zero of
// *progress (nil) is a valid, silent bar.
type progress struct {
	bar *progressbar.ProgressBar
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress returns a bar of total steps described by desc on stderr,
// or nil (silent) when stderr is not a terminal.
func newProgress(total int, desc string) *progress {
	if !isTerminal(stderr) {
		return nil
	}
	return &progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetPredictTime(false),
	)}
}

// Set moves the bar to done steps with a new description.
func (p *progress) Set(done int, desc string) {
	if p == nil {
		return
	}
	p.bar.Describe(desc)
	p.bar.Set(done)
}

// Add advances the bar by n steps.
func (p *progress) Add(n int) {
	if p == nil {
		return
	}
	p.bar.Add(n)
}

// Finish completes and clears the bar.
func (p *progress) Finish() {
	if p == nil {
		return
	}
	p.bar.Finish()
}
