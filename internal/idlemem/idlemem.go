// Package idlemem bounds the memory a process keeps in idle buffers: the
// buffers that pools hold between calls so that the next call need not
// allocate (the native evaluator's run arenas, the decoding engine's
// executors). Every pool asks Keep before it holds a buffer idle and
// Release when the buffer leaves its idle set, so that together they stay
// under one limit per process rather than one per model; after a while
// without calls, every registered pool drops its idle buffers.
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

	mu      sync.Mutex
	pools   []func() Dropper // weak: a pool that is gone is skipped
	janitor sync.Once
)

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
// releases through it, so that what it held is given back if the pool is
// collected with buffers still idle.
type Account struct{ n atomic.Int64 }

// Keep is the package's Keep, counted to the pool.
func (a *Account) Keep(n int64) bool {
	if !Keep(n) {
		return false
	}
	a.n.Add(n)
	return true
}

// Release is the package's Release, counted to the pool.
func (a *Account) Release(n int64) {
	a.n.Add(-n)
	Release(n)
}

// Register adds a pool to those Trim empties and returns its Account. The
// pool is held weakly: a pool nobody else references is collected and
// forgotten, and the bytes it held idle are given back.
func Register[T any, P interface {
	*T
	Dropper
}](p P) *Account {
	acct := &Account{}
	runtime.AddCleanup((*T)(p), func(a *Account) { held.Add(-a.n.Swap(0)) }, acct)
	w := weak.Make((*T)(p))
	mu.Lock()
	pools = append(pools, func() Dropper {
		if q := w.Value(); q != nil {
			return P(q)
		}
		return nil
	})
	mu.Unlock()
	janitor.Do(func() { go watch() })
	return acct
}

// Trim drops every registered pool's idle buffers and returns the bytes
// released, handing the memory back to the operating system.
func Trim() int64 {
	mu.Lock()
	live := pools[:0]
	var ds []Dropper
	for _, get := range pools {
		if d := get(); d != nil {
			live = append(live, get)
			ds = append(ds, d)
		}
	}
	pools = live
	mu.Unlock()
	var n int64
	for _, d := range ds {
		n += d.DropIdle()
	}
	dropped.Add(n)
	return n
}

// watch drops the idle buffers once the process has made no call for the
// timeout.
func watch() {
	for {
		d := time.Duration(timeout.Load())
		if d <= 0 {
			time.Sleep(time.Second)
			continue
		}
		// At most a second between looks, so that a new timeout takes
		// effect soon.
		time.Sleep(min(max(d/4, 10*time.Millisecond), time.Second))
		if held.Load() > 0 && time.Since(time.Unix(0, lastUsed.Load())) >= d && Trim() > 0 {
			debug.FreeOSMemory() // idle: the pause costs no call anything
		}
	}
}
