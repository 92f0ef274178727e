package kernel

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelCovers: from many goroutines at once (lanes, requests), each
// split covers its range exactly once, whatever helpers are free, and
// returns only when every part is done.
func TestParallelCovers(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for it := range 300 {
				n := 1 + (g*31+it*7)%97
				parts := 1 + it%5
				hits := make([]atomic.Int32, n)
				parallel(n, parts, func(lo, hi int) {
					if it%50 == 0 {
						time.Sleep(100 * time.Microsecond) // a slow part
					}
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				})
				for i := range hits {
					if h := hits[i].Load(); h != 1 {
						t.Errorf("n %d in %d parts: element %d done %d times", n, parts, i, h)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	idleMu.Lock()
	defer idleMu.Unlock()
	if helpers > maxHelpers() {
		t.Errorf("%d helpers started, bound %d", helpers, maxHelpers())
	}
}

// TestParallelPanic: a part's panic reaches the caller (where the
// evaluator turns it into the run's error), and the helpers go on.
func TestParallelPanic(t *testing.T) {
	for range 3 {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "part 0") {
					t.Errorf("recovered %v, want the first part's panic", r)
				}
			}()
			parallel(100, 4, func(lo, hi int) {
				if lo == 0 {
					panic("part 0")
				}
			})
		}()
	}
	var sum atomic.Int64
	parallel(100, 4, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 100 {
		t.Errorf("after panics, a split covers %d of 100", sum.Load())
	}
}

// BenchmarkParallelSmall: the cost of splitting a small product in two,
// as a decoder step at batch 1 does several times.
func BenchmarkParallelSmall(b *testing.B) {
	x := make([]float32, 4096)
	for b.Loop() {
		parallel(len(x), 2, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				x[i] += 1
			}
		})
	}
}

// awake counts the idle helpers not parked.
func awake() int {
	idleMu.Lock()
	defer idleMu.Unlock()
	n := 0
	for _, h := range idle {
		if !h.asleep.Load() {
			n++
		}
	}
	return n
}

// waitFor polls cond for up to a second (far beyond spinFor on any
// machine), reporting whether it came true.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestHold: under a hold for two threads, one idle helper (and no more)
// stays awake long past spinFor, where without a hold every helper
// parks; after the release it parks too, and a second release changes
// nothing.
func TestHold(t *testing.T) {
	split := func() {
		// Four helpers busy at once, so that four are idle after.
		parallel(5, 5, func(lo, hi int) { time.Sleep(time.Millisecond) })
	}
	split()
	if !waitFor(func() bool { return awake() == 0 }) {
		t.Fatalf("without a hold, %d idle helpers still awake after a second", awake())
	}
	release := Hold(2)
	split()
	time.Sleep(20 * spinFor)
	// One helper spins for the hold; the others park after spinFor.
	if !waitFor(func() bool { return awake() <= 1 }) {
		t.Errorf("under Hold(2), %d idle helpers awake after a second, want at most 1", awake())
	}
	for range 5 {
		if n := awake(); n != 1 {
			t.Fatalf("under Hold(2), %d idle helpers awake %v after the split, want 1", n, 20*spinFor)
		}
		time.Sleep(10 * spinFor)
	}
	release()
	release()
	if w := holdWant.Load(); w != 0 {
		t.Errorf("after release (twice), holds want %d helpers, want 0", w)
	}
	if !waitFor(func() bool { return awake() == 0 }) {
		t.Errorf("after release, %d idle helpers still awake after a second", awake())
	}
	if s := holdSpin.Load(); s != 0 {
		t.Errorf("after release, %d helpers counted spinning for a hold", s)
	}
	if r := Hold(1); r != nil {
		r()
		if w := holdWant.Load(); w != 0 {
			t.Errorf("Hold(1) wants %d helpers, want 0 (one thread has none)", w)
		}
	}
}
