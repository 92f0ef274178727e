package cpuprofile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStopKeepsDiscardLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	kept, dropped := filepath.Join(dir, "kept.pprof"), filepath.Join(dir, "dropped.pprof")

	p, err := Start(kept)
	if err != nil {
		t.Fatal(err)
	}
	// A second profile while one runs is refused, and leaves no file.
	if _, err := Start(filepath.Join(dir, "second.pprof")); err == nil || !strings.Contains(err.Error(), "second.pprof") {
		t.Errorf("a second Start while one runs: %v, want an error naming the file", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	p.Discard() // after Stop: nothing
	if st, err := os.Stat(kept); err != nil || st.Size() == 0 {
		t.Errorf("after Stop: %v, size %v; want the profile", err, st)
	}

	q, err := Start(dropped)
	if err != nil {
		t.Fatal(err)
	}
	q.Discard()
	if err := q.Stop(); err != nil { // after Discard: nothing
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "kept.pprof" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files left: %v, want kept.pprof alone (no temporary, no discarded or refused profile)", names)
	}
}
