package kernel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The goroutines that run the parts of a split product (parallel). A
// decoder step at batch 1 splits several products of a fraction of a
// millisecond each; starting a goroutine for each part, and waking the OS
// thread that runs it, cost as much as the part saved (two threads were
// slower than one). The helpers stay: after a part, a helper waits
// spinning for spinFor, where the next part of the same step usually
// finds it, and only then parks until work comes.

// spinFor is how long an idle helper, and a caller waiting for its
// helpers, spin before they park.
const spinFor = 50 * time.Microsecond

// holdWant is the helpers the callers between Hold and its release may
// use at once (threads-1 each); holdSpin is how many idle helpers are
// spinning past spinFor on their behalf (never more than holdWant).
var holdWant, holdSpin atomic.Int32

// Hold keeps up to threads-1 idle helpers spinning, not parked, until
// the release it returns is called: for a caller about to split many
// products among threads goroutines with serial work between them that
// may outlast spinFor, such as a decoder step at batch 1 (its cells,
// attention, log-softmax and the Loop's own work come between the
// classifier of one step and the cell of the next). A parked helper
// takes tens of microseconds to wake, as long as its part of a small
// product, so without a hold two threads gained little on such a run.
// Spinning helpers yield their thread to any other goroutine every few
// iterations. Holds may overlap; release is idempotent.
func Hold(threads int) (release func()) {
	n := int32(max(threads-1, 0))
	if n == 0 {
		return func() {}
	}
	holdWant.Add(n)
	var once sync.Once
	return func() { once.Do(func() { holdWant.Add(-n) }) }
}

// keepSpinning reports whether an idle helper past spinFor goes on
// spinning for a hold; spinning says whether it holds a slot already,
// which it gives up when the holds no longer want it.
func keepSpinning(spinning bool) bool {
	if spinning {
		if holdSpin.Load() <= holdWant.Load() {
			return true
		}
		holdSpin.Add(-1)
		return false
	}
	for {
		n := holdSpin.Load()
		if n >= holdWant.Load() {
			return false
		}
		if holdSpin.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// part is one range of a split loop given to a helper.
type part struct {
	f      func(lo, hi int)
	lo, hi int
	left   *atomic.Int32 // parts of the loop not yet done
	done   chan struct{} // the part that brings left to 0 sends on it
	panic  *atomic.Value // the first part's panic, for the caller
}

// finish counts a part done; the last one wakes a caller that stopped
// spinning.
func (p *part) finish() {
	if p.left.Add(-1) == 0 {
		p.done <- struct{}{}
	}
}

type helper struct {
	next   atomic.Pointer[part]
	asleep atomic.Bool
	wake   chan struct{} // a token wakes the helper once it is asleep
}

var (
	idleMu  sync.Mutex
	idle    []*helper // helpers waiting for a part
	helpers int       // helpers started
)

// maxHelpers bounds the helpers: those idle beyond it are not kept.
func maxHelpers() int { return 2 * runtime.GOMAXPROCS(0) }

// takeHelper returns an idle helper, starting one when there is none and
// the bound allows; nil otherwise.
func takeHelper() *helper {
	idleMu.Lock()
	defer idleMu.Unlock()
	if n := len(idle); n > 0 {
		h := idle[n-1]
		idle = idle[:n-1]
		return h
	}
	if helpers >= maxHelpers() {
		return nil
	}
	helpers++
	h := &helper{wake: make(chan struct{}, 1)}
	go h.loop()
	return h
}

func (h *helper) give(p *part) {
	h.next.Store(p)
	if h.asleep.Load() {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

func (h *helper) loop() {
	for {
		p := h.await()
		runPart(p)
		idleMu.Lock()
		idle = append(idle, h)
		idleMu.Unlock()
		// Done only once the helper is idle again: the caller's next
		// split finds it.
		p.finish()
	}
}

// await returns the next part: spinning for spinFor, then parked.
func (h *helper) await() *part {
	for {
		start := time.Now()
		spinning := false // holding a slot of holdSpin
		for i := 0; ; i++ {
			if p := h.next.Swap(nil); p != nil {
				if spinning {
					holdSpin.Add(-1)
				}
				return p
			}
			if i%64 == 63 {
				if time.Since(start) > spinFor {
					if spinning = keepSpinning(spinning); !spinning {
						break
					}
				}
				runtime.Gosched() // let a goroutine with work have this thread
			}
		}
		h.asleep.Store(true)
		if p := h.next.Swap(nil); p != nil {
			h.asleep.Store(false)
			return p
		}
		<-h.wake
		h.asleep.Store(false)
	}
}

// runPart runs a part, recording a panic for the caller to raise.
func runPart(p *part) {
	defer func() {
		if r := recover(); r != nil {
			p.panic.CompareAndSwap(nil, panicValue{r})
		}
	}()
	p.f(p.lo, p.hi)
}

// panicValue wraps a recovered value (atomic.Value needs one type).
type panicValue struct{ v any }

// parallel splits 0..n into t ranges of about equal size and calls f on
// each, the last on the calling goroutine, the others on helpers (a
// goroutine of their own when every helper is busy); it returns when all
// have, and a part's panic is raised again on the calling goroutine.
func parallel(n, t int, f func(lo, hi int)) {
	if t <= 1 {
		f(0, n)
		return
	}
	per := (n + t - 1) / t
	var left atomic.Int32
	var pv atomic.Value
	done := make(chan struct{}, 1)
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		if hi == n {
			f(lo, hi)
			break
		}
		left.Add(1)
		p := &part{f: f, lo: lo, hi: hi, left: &left, done: done, panic: &pv}
		if h := takeHelper(); h != nil {
			h.give(p)
			continue
		}
		go func() {
			runPart(p)
			p.finish()
		}()
	}
	// Spin while the helpers' parts are likely to end soon (all along
	// under a hold), then block until the last one does.
	start := time.Now()
	for i := 0; left.Load() > 0; i++ {
		if i%64 == 63 {
			if holdWant.Load() == 0 && time.Since(start) > spinFor {
				<-done
				break
			}
			runtime.Gosched()
		}
	}
	if r, ok := pv.Load().(panicValue); ok {
		panic(r.v)
	}
}
