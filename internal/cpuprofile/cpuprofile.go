// Package cpuprofile writes a Go CPU profile to a file atomically: the file
// appears, complete, only when the profile is stopped and kept.
package cpuprofile

import (
	"fmt"
	"runtime/pprof"

	"github.com/attnx/attnx/internal/atomicfile"
)

// Profile is a CPU profile being written; Stop or Discard ends it.
type Profile struct {
	f    *atomicfile.File
	done bool
}

// Start begins profiling this process's CPU into path (written through
// internal/atomicfile: a symlink's target, or /dev/stdout, as the other
// outputs of attnx are).
func Start(path string) (*Profile, error) {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Discard()
		return nil, fmt.Errorf("CPU profile %s: %w", path, err)
	}
	return &Profile{f: f}, nil
}

// Stop ends the profile and puts the file in place.
func (p *Profile) Stop() error {
	if p.done {
		return nil
	}
	p.done = true
	pprof.StopCPUProfile()
	if err := p.f.Commit(); err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	return nil
}

// Discard ends the profile and leaves no file (nothing once Stop has run):
// for the runs that failed, and as a deferred guard.
func (p *Profile) Discard() {
	if p.done {
		return
	}
	p.done = true
	pprof.StopCPUProfile()
	p.f.Discard()
}
