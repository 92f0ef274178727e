package leaktest

import (
	"io"
	"strings"
	"testing"
	"time"
)

// parked blocks until release is closed.
func parked(release <-chan struct{}) { <-release }

// TestFindsAndForgets: a goroutine of the package's, blocked, is found by
// Module and by its function's name, not by a name it does not run; a
// goroutine started by the package's code but running only the standard
// library (its "created by" line) is found too; once they end, Wait finds
// none; and Wait returns what is still there after its timeout.
func TestFindsAndForgets(t *testing.T) {
	if g := Wait(5 * time.Second); len(g) != 0 {
		t.Fatalf("before the test, found:\n%s", strings.Join(g, "\n\n"))
	}
	release := make(chan struct{})
	go parked(release)
	pr, pw := io.Pipe()
	go io.Copy(io.Discard, pr)        // standard library only: found by its "created by"
	time.Sleep(10 * time.Millisecond) // let them start
	for _, c := range []struct {
		match []string
		want  int
	}{
		{nil, 2},
		{[]string{"leaktest.parked("}, 1},
		{[]string{"io.Copy("}, 1},
		{[]string{"leaktest.parked(", "io.Copy("}, 2},
		{[]string{"internal/kernel."}, 0},
	} {
		if g := Goroutines(c.match...); len(g) != c.want {
			t.Errorf("Goroutines(%q) found %d, want %d:\n%s", c.match, len(g), c.want, strings.Join(g, "\n\n"))
		}
	}
	start := time.Now()
	if g := Wait(50*time.Millisecond, "leaktest.parked("); len(g) != 1 || !strings.Contains(g[0], "leaktest.parked(") {
		t.Errorf("Wait with a goroutine that stays returned %d stacks, want its one", len(g))
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Errorf("Wait returned after %v, before its timeout", time.Since(start))
	}
	close(release)
	pw.Close()
	if g := Wait(5 * time.Second); len(g) != 0 {
		t.Errorf("after they ended, found:\n%s", strings.Join(g, "\n\n"))
	}
}
