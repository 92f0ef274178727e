package translate

import (
	"context"
	"fmt"
	"sync"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/idlemem"
)

// Defaults of Options.MaxIdleBytes and Options.MaxLiveBytes.
const (
	DefaultMaxIdleBytes = 256 << 20
	DefaultMaxLiveBytes = 2 << 30
)

// pool holds the steps engine's executors (the preallocated buffers and
// IoBindings of one decode). Idle executors are kept for later calls up to
// maxIdle bytes, the oldest released first, and reused for any batch they
// have room for (a batch of slots rows padded to cells/slots tokens): their
// capacity, not their last shape, decides. Executors in use by calls count
// against maxLive bytes: a call that would go over waits until another call
// returns its executor (or its context ends), and a batch that alone needs
// more fails at once.
type pool struct {
	m                *decode.Model
	maxIdle, maxLive int64
	mu               sync.Mutex
	idle             []*decode.Executor // oldest first
	charged          map[*decode.Executor]int64
	idleBytes, live  int64
	wake             chan struct{} // closed when live bytes are returned
	made, peakLive   int64         // for tests: executors created, most live bytes
	closed           bool
	acct             *idlemem.Account // the process's bound on idle buffers
}

func newPool(m *decode.Model, maxIdle, maxLive int64) *pool {
	if maxIdle == 0 {
		maxIdle = DefaultMaxIdleBytes
	}
	if maxLive == 0 {
		maxLive = DefaultMaxLiveBytes
	}
	p := &pool{m: m, maxIdle: maxIdle, maxLive: maxLive, charged: map[*decode.Executor]int64{}, wake: make(chan struct{})}
	p.acct = idlemem.Register(p)
	return p
}

// get returns an executor with room for slots rows of cells positions in
// all, charged to the live budget until put or discard.
func (p *pool) get(ctx context.Context, slots, cells int) (*decode.Executor, error) {
	need := p.m.Bytes(slots, cells)
	if need > p.maxLive {
		return nil, &MemoryLimitError{What: fmt.Sprintf("a batch of %d decoding slots (rows times the beam width) of up to %d tokens", slots, cells/slots),
			Need: need, Limit: p.maxLive}
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		// The smallest idle executor with room that the budget allows,
		// else a new one of exactly the size needed.
		pick, charge := -1, int64(0)
		for i, ex := range p.idle {
			s, c := ex.Capacity()
			if b := ex.Bytes(); s >= slots && c >= cells && p.live+b <= p.maxLive && (pick < 0 || b < charge) {
				pick, charge = i, b
			}
		}
		if pick < 0 {
			charge = need
		}
		if p.live+charge <= p.maxLive {
			var ex *decode.Executor
			if pick >= 0 {
				ex = p.idle[pick]
				p.idle = append(p.idle[:pick], p.idle[pick+1:]...)
				p.idleBytes -= charge
				p.acct.Release(charge)
			} else {
				p.made++
			}
			p.live += charge
			p.peakLive = max(p.peakLive, p.live)
			p.mu.Unlock()
			if ex == nil {
				var err error
				if ex, err = p.m.NewExecutor(slots, cells); err != nil {
					p.release(charge)
					return nil, fmt.Errorf("translate: %w", err)
				}
			}
			p.mu.Lock()
			p.charged[ex] = charge
			p.mu.Unlock()
			return ex, nil
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		}
	}
}

// release returns live bytes and wakes the calls waiting for them.
func (p *pool) release(n int64) {
	p.mu.Lock()
	p.live -= n
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// put returns an executor for reuse, releasing the oldest idle ones past
// maxIdle bytes.
func (p *pool) put(ex *decode.Executor) {
	ex.Reset()
	p.mu.Lock()
	charge := p.charged[ex]
	delete(p.charged, ex)
	var evict []*decode.Executor
	if !p.closed {
		// Within this pool's maxIdle (the oldest go first) and the
		// process's bound on idle buffers (package idlemem: the executor
		// goes when the process has no room for it).
		b := ex.Bytes()
		for len(p.idle) > 0 && p.idleBytes+b > p.maxIdle {
			old := p.idle[0]
			evict = append(evict, old)
			p.idleBytes -= old.Bytes()
			p.acct.Release(old.Bytes())
			p.idle = p.idle[1:]
		}
		if b <= p.maxIdle && p.acct.Keep(b) {
			p.idle = append(p.idle, ex)
			p.idleBytes += b
		} else {
			evict = append(evict, ex)
		}
	} else {
		evict = append(evict, ex)
	}
	p.mu.Unlock()
	for _, x := range evict {
		x.Close()
	}
	p.release(charge)
}

// discard releases an executor instead of keeping it.
func (p *pool) discard(ex *decode.Executor) {
	p.mu.Lock()
	charge := p.charged[ex]
	delete(p.charged, ex)
	p.mu.Unlock()
	ex.Close()
	p.release(charge)
}

// stats returns the idle executors, their bytes and the live bytes.
func (p *pool) stats() (idle int, idleBytes, live int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle), p.idleBytes, p.live
}

// close releases every idle executor and unregisters the pool from the
// process's bound (package idlemem); later gets fail.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.DropIdle()
	p.acct.Close()
}

// DropIdle releases every idle executor (idlemem.Dropper).
func (p *pool) DropIdle() int64 {
	p.mu.Lock()
	idle, n := p.idle, p.idleBytes
	p.idle, p.idleBytes = nil, 0
	p.mu.Unlock()
	p.acct.Release(n)
	for _, ex := range idle {
		ex.Close()
	}
	return n
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// MemoryLimitError is a call whose decoding buffers would need more than
// Options.MaxLiveBytes. Its remedy is fewer rows decoded together (a
// smaller batch or beam) or a larger limit, which each surface names in
// its own terms (Remedy).
type MemoryLimitError struct {
	// What describes the batch that was too large.
	What string
	// Need is what it would take, Limit what Options.MaxLiveBytes allows,
	// in bytes.
	Need, Limit int64
}

// Remedy returns the error's message with the remedy named by the caller:
// "use a smaller --batch" for a command line, say.
func (e *MemoryLimitError) Remedy(remedy string) string {
	return fmt.Sprintf("%s needs about %s of decoding buffers, more than the limit of %s; %s", e.What, mib(e.Need), mib(e.Limit), remedy)
}

// Error returns the message with the remedy in this package's terms.
func (e *MemoryLimitError) Error() string {
	return "translate: " + e.Remedy("use a smaller BatchSize or Beam, or a larger MaxLiveBytes")
}
