package kernel

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/leaktest"
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

// TestMain holds the helpers for the package's tests and benchmarks, as
// an open model does (without a user each part gets a goroutine of its
// own).
func TestMain(m *testing.M) {
	Acquire()
	code := m.Run()
	Release()
	os.Exit(code)
}

// helperLoops counts the package's goroutines (helpers, and parts given
// goroutines of their own while they run).
func helperLoops() int { return len(leaktest.Goroutines("internal/kernel.")) }

// TestReleaseEndsHelpers: while the package has a user the helpers stay
// between splits; when the last user releases it they all end, idle or
// busy with a part at the time, and a split without users still covers
// its range (on goroutines that end with their parts). A later Acquire
// starts helpers again.
func TestReleaseEndsHelpers(t *testing.T) {
	Release() // TestMain's hold; taken again at the end
	defer Acquire()
	waitLoops := func(want func(int) bool, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		n := helperLoops()
		for !want(n) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			n = helperLoops()
		}
		if !want(n) {
			t.Fatalf("%d helper goroutines, want %s", n, what)
		}
	}
	waitLoops(func(n int) bool { return n == 0 }, "none before any user")
	for round := range 3 {
		Acquire()
		Acquire() // two users: the first Release keeps the helpers
		var sum atomic.Int64
		parallel(400, 4, func(lo, hi int) { sum.Add(int64(hi - lo)) })
		if sum.Load() != 400 {
			t.Fatalf("round %d: a split covered %d of 400", round, sum.Load())
		}
		waitLoops(func(n int) bool { return n > 0 }, "some while the package has users")
		Release()
		kept := helperLoops()
		if kept == 0 {
			t.Fatalf("round %d: the helpers ended while a user remained", round)
		}
		// A part still running when the last user goes: its helper ends
		// after it.
		started, finish := make(chan struct{}), make(chan struct{})
		splitDone := make(chan struct{})
		go func() {
			defer close(splitDone)
			parallel(2, 2, func(lo, hi int) {
				if lo == 0 {
					close(started)
					<-finish
				}
			})
		}()
		<-started
		Release()
		close(finish)
		<-splitDone
		waitLoops(func(n int) bool { return n == 0 }, "none after the last Release")
		idleMu.Lock()
		h, l := helpers, len(idle)
		idleMu.Unlock()
		if h != 0 || l != 0 {
			t.Fatalf("round %d: after the last Release %d helpers counted, %d idle", round, h, l)
		}
		sum.Store(0)
		parallel(400, 4, func(lo, hi int) { sum.Add(int64(hi - lo)) })
		if sum.Load() != 400 {
			t.Fatalf("round %d: without users a split covered %d of 400", round, sum.Load())
		}
		waitLoops(func(n int) bool { return n == 0 }, "none started by a split without users")
	}
}
