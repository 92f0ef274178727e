package idlemem

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/leaktest"
)

// fakePool holds idle "buffers" of given sizes, as the real pools do:
// Keep before holding one, Release when it leaves.
type fakePool struct {
	mu   sync.Mutex
	idle []int64
	acct *Account
}

func newFake() *fakePool {
	p := &fakePool{}
	p.acct = Register(p)
	return p
}

func (p *fakePool) put(n int64) bool {
	if !p.acct.Keep(n) {
		return false
	}
	p.mu.Lock()
	p.idle = append(p.idle, n)
	p.mu.Unlock()
	return true
}

func (p *fakePool) DropIdle() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, b := range p.idle {
		n += b
	}
	p.acct.Release(n)
	p.idle = nil
	return n
}

// TestLimitTrimAndTimeout: two pools share one limit per process; Trim
// empties both; after the timeout without calls the janitor empties
// them by itself; a pool nobody holds is forgotten, and what it held idle
// given back.
func TestLimitTrimAndTimeout(t *testing.T) {
	oldLimit, oldTimeout := SetLimit(100), SetTimeout(0)
	defer func() { SetLimit(oldLimit); SetTimeout(oldTimeout) }()
	Trim()
	a, b := newFake(), newFake()
	if !a.put(60) || !b.put(40) {
		t.Fatal("100 bytes within a limit of 100 were refused")
	}
	if b.put(1) {
		t.Error("a byte over the process's limit was kept")
	}
	if Bytes() != 100 {
		t.Errorf("Bytes() = %d, want 100", Bytes())
	}
	if n := Trim(); n != 100 || Bytes() != 0 || len(a.idle)+len(b.idle) != 0 {
		t.Errorf("Trim released %d, %d left, pools hold %d and %d buffers", n, Bytes(), len(a.idle), len(b.idle))
	}
	a.put(30)
	SetTimeout(50 * time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for Bytes() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if Bytes() != 0 || len(a.idle) != 0 {
		t.Errorf("after the idle timeout: %d bytes held, the pool has %d buffers", Bytes(), len(a.idle))
	}
	SetTimeout(0)
	mu.Lock()
	before := len(pools)
	mu.Unlock()
	func() { newFake().put(7) }()
	if Bytes() != 7 {
		t.Fatalf("Bytes() = %d, want the 7 of a pool about to be collected", Bytes())
	}
	for i := 0; i < 100 && Bytes() != 0; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if Bytes() != 0 {
		t.Errorf("a collected pool's 7 bytes are still counted: %d", Bytes())
	}
	Trim()
	mu.Lock()
	after := len(pools)
	mu.Unlock()
	if after > before {
		t.Errorf("a pool nobody references is still registered: %d pools, %d before it", after, before)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

// watchers counts the goroutines of the package's (the watcher, or the
// wrapper that starts it).
func watchers() int { return len(leaktest.Goroutines("internal/idlemem.")) }

// waitWatchers polls (collecting garbage, so that pools other tests left
// are forgotten) until want(watchers()) or 10 seconds have passed.
func waitWatchers(t *testing.T, want func(int) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	n := watchers()
	for !want(n) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		n = watchers()
	}
	if !want(n) {
		t.Fatalf("%d watcher goroutines, want %s", n, what)
	}
}

// TestWatcherLifetime: the watcher runs only while a pool is registered:
// none before the first, one for any number of pools, none once the last
// account is closed or its pool collected; a closed account gives back
// what it counted, refuses Keep and ignores a late Release.
func TestWatcherLifetime(t *testing.T) {
	oldLimit := SetLimit(1000)
	defer SetLimit(oldLimit)
	waitWatchers(t, func(n int) bool { return n == 0 }, "none with no pool registered")
	base := Bytes()
	a, b := newFake(), newFake()
	waitWatchers(t, func(n int) bool { return n == 1 }, "one for two pools")
	a.put(10)
	b.put(20)
	a.acct.Close()
	if got := Bytes() - base; got != 20 {
		t.Errorf("after closing a pool's account holding 10 of 30 bytes, %d are counted, want 20", got)
	}
	if a.acct.Keep(1) {
		t.Error("a closed account kept a byte")
	}
	a.acct.Release(10) // the pool dropping its buffer late: already given back
	if got := Bytes() - base; got != 20 {
		t.Errorf("a closed account's late Release changed the count: %d, want 20", got)
	}
	a.acct.Close() // again: nothing
	waitWatchers(t, func(n int) bool { return n == 1 }, "one while a pool is left")
	b.DropIdle()
	b.acct.Close()
	waitWatchers(t, func(n int) bool { return n == 0 }, "none after the last account closed")
	// A pool collected without Close ends the watcher too.
	func() { newFake().put(5) }()
	waitWatchers(t, func(n int) bool { return n == 0 }, "none after the last pool was collected")
	if got := Bytes() - base; got != 0 {
		t.Errorf("%d bytes still counted after every pool went", got)
	}
	// And a new pool starts it again.
	c := newFake()
	waitWatchers(t, func(n int) bool { return n == 1 }, "one for a pool registered later")
	c.acct.Close()
	waitWatchers(t, func(n int) bool { return n == 0 }, "none after it closed")
}
