// Package idlemem bounds the memory a process keeps in idle buffers: the
// buffers that pools hold between calls so that the next call need not
// allocate (the native evaluator's run arenas, the decoding engine's
// executors). Every pool asks Keep before it holds a buffer idle and
// Release when the buffer leaves its idle set, so that together they stay
// under one limit per process rather than one per model; after a while
// without calls, every registered pool drops its idle buffers. The
// goroutine that watches for that idle time runs only while some pool is
// registered: it starts with the first Register and ends when the last
// pool's Account is closed (or the pool collected).
package idlemem

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"weak"
)

// Defaults of the limit and of the idle time after which idle buffers are
// dropped.
const (
	DefaultLimit   = 128 << 20
	DefaultTimeout = 30 * time.Second
)

// Dropper is a pool whose idle buffers can be dropped: DropIdle releases
// them all (calling Release for their bytes) and returns how many bytes it
// released.
type Dropper interface{ DropIdle() int64 }

var (
	limit    atomic.Int64
	held     atomic.Int64
	dropped  atomic.Int64 // bytes dropped by Trim, for metrics
	lastUsed atomic.Int64 // unix nanoseconds of the last Keep or Release
	timeout  atomic.Int64

	mu    sync.Mutex
	pools []registered
	stop  chan struct{} // closed to end the watcher; nil when none runs
)

// registered is a pool Trim empties, held weakly: get returns nil once
// the pool is gone.
type registered struct {
	acct *Account
	get  func() Dropper
}

func init() {
	limit.Store(DefaultLimit)
	timeout.Store(int64(DefaultTimeout))
}

// SetLimit sets the bytes the process may keep in idle buffers (0 keeps
// none) and returns the previous limit; buffers already kept are dropped
// down to it.
func SetLimit(n int64) int64 {
	old := limit.Swap(max(n, 0))
	if held.Load() > n {
		Trim()
	}
	return old
}

// Limit returns the bytes the process may keep in idle buffers.
func Limit() int64 { return limit.Load() }

// SetTimeout sets how long the process may go without a Keep or Release
// before every pool drops its idle buffers (0 or less: never), and
// returns the previous one.
func SetTimeout(d time.Duration) time.Duration {
	return time.Duration(timeout.Swap(int64(d)))
}

// Bytes returns the bytes held in idle buffers now.
func Bytes() int64 { return held.Load() }

// Dropped returns the bytes dropped by Trim so far (at the idle timeout or
// to make room).
func Dropped() int64 { return dropped.Load() }

// Keep reserves n bytes for a buffer a pool is about to hold idle, and
// reports whether it may: false when that would take the process over
// its limit (the pool then lets the buffer go).
func Keep(n int64) bool {
	touch()
	for {
		h := held.Load()
		if h+n > limit.Load() {
			return false
		}
		if held.CompareAndSwap(h, h+n) {
			return true
		}
	}
}

// Release gives back n bytes a pool reserved with Keep, when the buffer
// is taken for a call or dropped.
func Release(n int64) {
	touch()
	held.Add(-n)
}

func touch() { lastUsed.Store(time.Now().UnixNano()) }

// Account is one pool's share of the idle bytes: a pool keeps and
// releases through it, so that what it held is given back when the
// account is closed or the pool collected with buffers still idle.
type Account struct {
	mu     sync.Mutex
	n      int64
	closed bool
}

// Keep is the package's Keep, counted to the pool; false once the account
// is closed.
func (a *Account) Keep(n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || !Keep(n) {
		return false
	}
	a.n += n
	return true
}

// Release is the package's Release, counted to the pool. After Close it
// does nothing: Close gave back what the pool held.
func (a *Account) Release(n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.n -= n
	Release(n)
}

// Close unregisters the pool: the bytes it still counts are given back,
// Trim no longer empties it, later Keeps are refused, and when it was the
// last pool registered the watcher goroutine ends. The pool drops its idle
// buffers first (its own close). Calling Close again does nothing.
func (a *Account) Close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	held.Add(-a.n)
	a.n = 0
	a.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	for i, r := range pools {
		if r.acct == a {
			pools = append(pools[:i], pools[i+1:]...)
			break
		}
	}
	if len(pools) == 0 && stop != nil {
		close(stop)
		stop = nil
	}
}

// Register adds a pool to those Trim empties and returns its Account,
// which the pool closes when it is closed itself. The pool is held
// weakly: a pool nobody else references is collected and its account
// closed, the bytes it held idle given back.
func Register[T any, P interface {
	*T
	Dropper
}](p P) *Account {
	acct := &Account{}
	runtime.AddCleanup((*T)(p), (*Account).Close, acct)
	w := weak.Make((*T)(p))
	mu.Lock()
	defer mu.Unlock()
	pools = append(pools, registered{acct: acct, get: func() Dropper {
		if q := w.Value(); q != nil {
			return P(q)
		}
		return nil
	}})
	if stop == nil {
		stop = make(chan struct{})
		go watch(stop)
	}
	return acct
}

// Trim drops every registered pool's idle buffers and returns the bytes
// released, handing the memory back to the operating system.
func Trim() int64 {
	mu.Lock()
	var ds []Dropper
	for _, r := range pools {
		if d := r.get(); d != nil { // a collected pool's cleanup unregisters it
			ds = append(ds, d)
		}
	}
	mu.Unlock()
	var n int64
	for _, d := range ds {
		n += d.DropIdle()
	}
	dropped.Add(n)
	return n
}

// watch drops the idle buffers once the process has made no call for the
// timeout, until stop is closed.
func watch(stop <-chan struct{}) {
	tick := time.NewTimer(time.Second)
	defer tick.Stop()
	for {
		d := time.Duration(timeout.Load())
		// At most a second between looks, so that a new timeout takes
		// effect soon.
		wait := time.Second
		if d > 0 {
			wait = min(max(d/4, 10*time.Millisecond), time.Second)
		}
		tick.Reset(wait)
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if d > 0 && held.Load() > 0 && time.Since(time.Unix(0, lastUsed.Load())) >= d && Trim() > 0 {
			debug.FreeOSMemory() // idle: the pause costs no call anything
		}
	}
}
