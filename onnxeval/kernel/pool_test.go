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

// TestParallelQuickParts: parts that end before the caller has handed out
// the next (instant parts, three to eight of them) must still let every
// split return. A split once counted its parts as it handed them out, so
// that a quick first part brought the count to zero early and signalled
// twice: the second signal blocked its helper forever, and the next split
// given that helper waited forever.
func TestParallelQuickParts(t *testing.T) {
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for it := range 3000 {
					parallel(64, 3+(g+it)%6, func(lo, hi int) {})
				}
			})
		}
		wg.Wait()
	}()
	// Far longer than the splits take (well under a second here): only a
	// split that never returns reaches it.
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		t.Fatal("a split of instant parts did not return in 2 minutes")
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
	for _, n := range []int{0, 1} { // fewer elements than threads
		var calls atomic.Int32
		parallel(n, 3, func(lo, hi int) {
			if lo != 0 || hi != n {
				t.Errorf("parallel(%d, 3) called f(%d, %d)", n, lo, hi)
			}
			calls.Add(1)
		})
		if calls.Load() != 1 {
			t.Errorf("parallel(%d, 3) called f %d times", n, calls.Load())
		}
	}
	var sum atomic.Int64
	parallel(100, 4, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 100 {
		t.Errorf("after panics, a split covers %d of 100", sum.Load())
	}
}

// TestParallelPanicWaits: when the caller's own part panics, the split
// still waits for the helpers' parts before the panic goes on: the
// evaluator turns it into an error and reuses the run's buffers, which a
// part still running would write into.
func TestParallelPanicWaits(t *testing.T) {
	var done atomic.Int32
	func() {
		defer func() {
			if r := recover(); r != "last part" {
				t.Errorf("recovered %v, want the last part's panic", r)
			}
		}()
		parallel(100, 4, func(lo, hi int) {
			if hi == 100 { // the caller's part
				panic("last part")
			}
			time.Sleep(5 * time.Millisecond)
			done.Add(1)
		})
	}()
	if n := done.Load(); n != 3 {
		t.Errorf("the panic went on with %d of the 3 other parts done", n)
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
