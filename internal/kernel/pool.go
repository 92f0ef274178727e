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
//
// They stay only while the package has users (Acquire, Release: a native
// evaluator model of more than one thread holds it from FromGraph until
// Close, or until it is collected unclosed): when the
// last user releases it, every helper ends, so that a process that has
// closed its models keeps no goroutine of the package; a split without
// users gives each part a goroutine of its own, which ends with the part.

// spinFor is how long an idle helper, and a caller waiting for its
// helpers, spin before they park. It outlasts the serial work between
// two products of a decoder step at batch 1 (the cells, attention,
// log-softmax, the search or a Loop's own work: often more than 50 us),
// so that the next product finds its helper awake: waking a parked one
// took as long as its part, and a bound of 50 us left a step's LSTM
// products no faster on two threads than on one. Measured on 2 cores,
// the recipe model, runs of 50, 100 and 150 us interleaved in one
// process: 150 us took greedy int8 at batch 1 from 8.65 to 6.24 ms a
// sentence, beam 5 from 13.9 to 10.2, float32 greedy from 50.1 to 42.1,
// and a scheduler serving 8 clients from 171-192 to 213-231 sentences/s
// (p99 56-66 -> 43-51 ms). Longer spins gained no more: helpers kept
// awake for a whole run, or for 300 us or 1 ms, gained as much at batch
// 1, but in the same runs a request of 15 ms now and then took 120-140
// (on this shared virtual machine, spinning seems to cost the time
// slices the work needed).
const spinFor = 150 * time.Microsecond

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
	helpers int       // helpers started and not yet ended
	users   int       // Acquire calls not yet released
)

// quit is the part given to an idle helper to end it.
var quit = &part{}

// Acquire records a user of the helpers (a model that will run split
// products): from the first Acquire until the matching last Release,
// helpers started for splits are kept for the next ones. Every Acquire
// needs one Release.
func Acquire() {
	idleMu.Lock()
	users++
	idleMu.Unlock()
}

// Release ends a use begun by Acquire. When no user is left, the idle
// helpers end at once and busy ones when their part is done.
func Release() {
	idleMu.Lock()
	defer idleMu.Unlock()
	if users <= 0 {
		panic("kernel: Release without Acquire")
	}
	users--
	if users > 0 {
		return
	}
	for _, h := range idle {
		h.give(quit)
	}
	helpers -= len(idle)
	idle = nil
}

// maxHelpers bounds the helpers: those idle beyond it are not kept.
func maxHelpers() int { return 2 * runtime.GOMAXPROCS(0) }

// takeHelper returns an idle helper, starting one when there is none and
// the bound allows; nil otherwise, and always nil without users.
func takeHelper() *helper {
	idleMu.Lock()
	defer idleMu.Unlock()
	if users == 0 {
		return nil
	}
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
		if p == quit {
			return // Release counted it out of helpers
		}
		runPart(p)
		idleMu.Lock()
		stay := users > 0
		if stay {
			idle = append(idle, h)
		} else {
			helpers--
		}
		idleMu.Unlock()
		// Done only once the helper is idle again: the caller's next
		// split finds it.
		p.finish()
		if !stay {
			return
		}
	}
}

// await returns the next part: spinning for spinFor, then parked.
func (h *helper) await() *part {
	for {
		start := time.Now()
		for i := 0; ; i++ {
			if p := h.next.Swap(nil); p != nil {
				return p
			}
			if i%64 == 63 {
				if time.Since(start) > spinFor {
					break
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
func runPart(p *part) { runRange(p.f, p.lo, p.hi, p.panic) }

// runRange calls f(lo, hi), recording a panic in pv (the first one only).
func runRange(f func(lo, hi int), lo, hi int, pv *atomic.Value) {
	defer func() {
		if r := recover(); r != nil {
			pv.CompareAndSwap(nil, panicValue{r})
		}
	}()
	f(lo, hi)
}

// panicValue wraps a recovered value (atomic.Value needs one type).
type panicValue struct{ v any }

// parallel splits 0..n into t ranges of about equal size and calls f on
// each, the last on the calling goroutine, the others on helpers (a
// goroutine of their own when every helper is busy); it returns when all
// have, and a part's panic (the first recorded) is raised again on the
// calling goroutine once every part has ended.
func parallel(n, t int, f func(lo, hi int)) {
	if t <= 1 || n <= 1 {
		f(0, n)
		return
	}
	per := (n + t - 1) / t
	// Every part but the last (the caller's) is counted before any is
	// handed out: counted one by one, a part ending before the next was
	// counted brought left to 0 early, and two parts then sent on done,
	// the second blocking its helper forever (and the next split given
	// that helper with it).
	var left atomic.Int32
	left.Store(int32((n+per-1)/per - 1))
	var pv atomic.Value
	done := make(chan struct{}, 1)
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		if hi == n { // the caller's part: a panic waits for the others
			runRange(f, lo, hi, &pv)
			break
		}
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
	// Spin while the helpers' parts are likely to end soon, then block
	// until the last one does.
	start := time.Now()
	for i := 0; left.Load() > 0; i++ {
		if i%64 == 63 {
			if time.Since(start) > spinFor {
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
