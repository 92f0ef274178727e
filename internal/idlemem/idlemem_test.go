package idlemem

import (
	"runtime"
	"sync"
	"testing"
	"time"
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
