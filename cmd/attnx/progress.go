package main

import (
	"fmt"
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

// translateBar is a progress bar on stderr, shown only when stderr is a
// terminal, the input is not, and the input turns out long: a regular file
// of more than translateBarMinBytes, or more than one batch from a pipe.
type translateBar struct {
	enabled bool
	size    int64 // -1 when unknown
	bar     *progressbar.ProgressBar
	updates int
}

const translateBarMinBytes = 64 * 1024

func newTranslateBar(in io.Reader) *translateBar {
	b := &translateBar{size: -1}
	errf, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(errf.Fd())) {
		return b
	}
	inf, ok := in.(*os.File)
	if ok && term.IsTerminal(int(inf.Fd())) {
		return b // someone is typing
	}
	b.enabled = true
	if ok {
		if st, err := inf.Stat(); err == nil && st.Mode().IsRegular() {
			b.size = st.Size()
		}
	}
	return b
}

func (b *translateBar) update(bytes int64, lines int) {
	if !b.enabled {
		return
	}
	b.updates++
	if b.bar == nil {
		long := b.updates > 1 || (b.size > translateBarMinBytes)
		if !long {
			return
		}
		b.bar = progressbar.NewOptions64(b.size,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("translating"),
			progressbar.OptionShowBytes(b.size > 0),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100_000_000),
			progressbar.OptionClearOnFinish(),
		)
	}
	if b.size > 0 {
		b.bar.Set64(bytes)
	} else {
		b.bar.Describe(fmt.Sprintf("translating: %d lines", lines))
		b.bar.Set64(bytes)
	}
}

func (b *translateBar) close() {
	if b.bar != nil {
		b.bar.Finish()
		b.bar.Clear()
	}
}
