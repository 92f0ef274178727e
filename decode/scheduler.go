package decode

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// ErrQueueFull is wrapped by the error of a Scheduler call that finds the
// scheduler's queue full; the call is refused at once.
var ErrQueueFull = errors.New("decode: scheduler queue full")

// ErrSchedulerClosed is returned by calls on a closed Scheduler.
var ErrSchedulerClosed = errors.New("decode: scheduler is closed")

// SchedulerConfig bounds a Scheduler.
type SchedulerConfig struct {
	// MaxSlots bounds the decoder's batch: the Widths of the live rows,
	// summed, never exceed it (a greedy row holds one slot, a beam of K
	// holds K). A row waits in the queue until there is room for it.
	MaxSlots int
	// MaxQueue bounds the calls whose rows have not all joined the batch
	// yet; a call past it fails at once with ErrQueueFull.
	MaxQueue int
	// Observe, when set, is called before every decoder step with the
	// number of slots the step decodes, on the scheduler's goroutine: it
	// must not block for long, since the whole batch waits for it.
	Observe func(slots int)
}

// SchedulerStats are a Scheduler's counters.
type SchedulerStats struct {
	// Queued is the number of calls whose rows have not all joined.
	Queued int
	// Steps is the number of decoder steps run.
	Steps uint64
	// Joined is the number of rows that joined the batch.
	Joined uint64
	// Removed is the number of rows taken out of the batch unfinished,
	// because their call's context ended (or their call failed).
	Removed uint64
	// BindingHits and BindingMisses count the executor's runs that found
	// their IoBinding cached and that had to make one.
	BindingHits, BindingMisses uint64
}

// Scheduler is continuous batching over one Executor: the rows of every
// concurrent call share one running Batch. One goroutine drives the batch;
// callers talk to it over channels. At each step boundary the rows of
// waiting calls are encoded and join (Batch.Add), in arrival order, as far
// as MaxSlots allows (a call's rows may join over several boundaries); rows
// leave as soon as they finish, and a call returns once all its rows have
// finished. A call whose context ends has its rows taken out of the batch
// at the next step boundary (Batch.Remove) and returns the context's
// error.
//
// A row decodes to what it decodes alone: each row has its own states and
// encoder outputs, padding is masked, and a Search sees only its own row.
type Scheduler struct {
	cfg SchedulerConfig
	b   *Batch

	mu     sync.Mutex // guards closed and sends on submit
	closed bool
	submit chan *call // buffered to MaxQueue; closed by Close
	cancel chan *call
	exited chan struct{}

	queued                 atomic.Int64
	steps, joined, removed atomic.Uint64

	// Scheduler goroutine only.
	owner        map[Search]*call // the call of each row in the batch
	pending      []*call          // arrival order; rows not all joined
	joinSources  [][]int64        // scratch of one boundary's joins
	joinSearches []Search
	joinOwners   []*call
}

// call is one Decode call, as the scheduler goroutine sees it.
type call struct {
	sources  [][]int64
	searches []Search
	width    int // slots of all its rows

	// Scheduler goroutine only, until done is closed.
	next      int // rows joined so far
	left      int // rows in the batch
	finished  bool
	cancelled bool // its context ended
	err       error
	done      chan struct{} // closed when finished
}

// NewScheduler starts a Scheduler over ex, which it owns from then on and
// closes in Close.
func NewScheduler(ex *Executor, cfg SchedulerConfig) (*Scheduler, error) {
	if cfg.MaxSlots < 1 || cfg.MaxQueue < 1 {
		return nil, fmt.Errorf("decode: scheduler needs MaxSlots and MaxQueue of at least 1 (got %d and %d)", cfg.MaxSlots, cfg.MaxQueue)
	}
	s := &Scheduler{
		cfg:    cfg,
		b:      NewBatch(ex),
		submit: make(chan *call, cfg.MaxQueue),
		cancel: make(chan *call),
		exited: make(chan struct{}),
		owner:  map[Search]*call{},
	}
	go s.run()
	return s, nil
}

// Decode decodes sources, row i driven by searches[i], in the shared
// batch, and returns once every row has finished; read the results from
// the Searches. It fails at once with ErrQueueFull when MaxQueue calls are
// already waiting. When ctx ends first, the rows still decoding leave the
// batch at the next step boundary and Decode returns ctx.Err(); the
// Searches are then partial. Decode is safe for concurrent use; the
// Searches belong to the scheduler until it returns.
func (s *Scheduler) Decode(ctx context.Context, sources [][]int64, searches []Search) error {
	if len(sources) != len(searches) {
		return fmt.Errorf("decode: Decode got %d sources and %d searches", len(sources), len(searches))
	}
	if len(sources) == 0 {
		return nil
	}
	c := &call{sources: sources, searches: searches, done: make(chan struct{})}
	for i, src := range sources {
		if len(src) == 0 {
			return fmt.Errorf("decode: source row %d is empty; every row needs at least one token", i)
		}
		w := searches[i].Width()
		if w < 1 || w > s.cfg.MaxSlots {
			return fmt.Errorf("decode: search %d has width %d: want 1 to the scheduler's MaxSlots, %d", i, w, s.cfg.MaxSlots)
		}
		c.width += w
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if n := s.queued.Add(1); n > int64(s.cfg.MaxQueue) {
		s.queued.Add(-1)
		return fmt.Errorf("%w: %d calls waiting for room in a batch of at most %d slots", ErrQueueFull, s.cfg.MaxQueue, s.cfg.MaxSlots)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.queued.Add(-1)
		return ErrSchedulerClosed
	}
	// Never blocks: at most MaxQueue calls are queued, and the channel
	// holds that many.
	s.submit <- c
	s.mu.Unlock()

	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
	}
	select {
	case s.cancel <- c:
		<-c.done
	case <-c.done:
		// Finished while the cancellation was being sent.
		if c.err == nil {
			return nil
		}
	}
	if err := ctx.Err(); err != nil && errors.Is(c.err, errCancelled) {
		return err
	}
	return c.err
}

// errCancelled marks a call whose rows were taken out because its context
// ended.
var errCancelled = errors.New("decode: call cancelled")

// QueueDepth returns the number of calls whose rows have not all joined.
func (s *Scheduler) QueueDepth() int { return int(s.queued.Load()) }

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() SchedulerStats {
	hits, misses := s.b.Executor().BindingStats()
	return SchedulerStats{Queued: s.QueueDepth(), Steps: s.steps.Load(), Joined: s.joined.Load(), Removed: s.removed.Load(),
		BindingHits: hits, BindingMisses: misses}
}

// Close refuses new calls, waits for the calls in progress to finish and
// closes the executor. Calling it again does nothing.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.submit)
	}
	s.mu.Unlock()
	<-s.exited
}

// run is the scheduler goroutine.
func (s *Scheduler) run() {
	defer close(s.exited)
	defer s.b.Executor().Close()
	submit := s.submit // nil once closed and drained: a nil channel is never ready
	for {
		if s.b.Rows() == 0 && len(s.pending) == 0 {
			if submit == nil {
				return
			}
			// Idle: wait for a call.
			select {
			case c, ok := <-submit:
				submit = s.arrive(submit, c, ok)
			case c := <-s.cancel:
				s.drop(c)
			}
		}
		// Let the goroutines that are ready run first (callers on their
		// way to submit, such as HTTP handlers reading requests), so that
		// their rows join this step rather than a later one: where the
		// callers share the CPU with the decoder, steps come fewer and
		// fuller (measured: about 15% more throughput with 32 HTTP
		// clients on 2 cores); where nothing else is ready, this costs
		// nothing.
		runtime.Gosched()
		// Take in, without waiting, what was sent during the last step.
	drain:
		for {
			select {
			case c, ok := <-submit:
				if submit = s.arrive(submit, c, ok); submit == nil {
					break drain
				}
			case c := <-s.cancel:
				s.drop(c)
			default:
				break drain
			}
		}
		s.admit()
		if s.b.Rows() == 0 {
			continue
		}
		if s.cfg.Observe != nil {
			s.cfg.Observe(s.b.Executor().Len())
		}
		done, err := s.b.Step()
		s.steps.Add(1)
		if err != nil {
			s.failAll(fmt.Errorf("decode: scheduler step: %w", err))
			continue
		}
		for _, search := range done {
			c := s.owner[search]
			delete(s.owner, search)
			c.left--
			if c.left == 0 && c.next == len(c.sources) {
				s.finish(c, nil)
			}
		}
	}
}

// arrive queues a submitted call, or returns nil when ok is false (the
// submit channel is closed and drained).
func (s *Scheduler) arrive(submit chan *call, c *call, ok bool) chan *call {
	switch {
	case !ok:
		return nil
	case c.cancelled:
		s.queued.Add(-1)
		s.finish(c, errCancelled)
	default:
		s.pending = append(s.pending, c)
	}
	return submit
}

// unqueue takes c out of the queue if it is there.
func (s *Scheduler) unqueue(c *call) {
	for i, p := range s.pending {
		if p == c {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			s.queued.Add(-1)
			return
		}
	}
}

// drop ends a call whose context ended: out of the queue, its rows out of
// the batch. A call not received yet is marked, and arrive ends it.
func (s *Scheduler) drop(c *call) {
	if c.finished {
		return
	}
	c.cancelled = true
	if c.next == 0 && !slices.Contains(s.pending, c) {
		return
	}
	s.fail(c, errCancelled)
}

// fail ends a call with err, taking it out of the queue and its rows out
// of the batch.
func (s *Scheduler) fail(c *call, err error) {
	if c.finished {
		return
	}
	s.unqueue(c)
	for _, search := range c.searches[:c.next] {
		if s.owner[search] != c {
			continue // finished, or never joined
		}
		delete(s.owner, search)
		if s.b.Remove(search) {
			s.removed.Add(1)
		}
	}
	s.finish(c, err)
}

// admit joins the rows of waiting calls, in arrival order, while the batch
// has room, with one encoder run.
func (s *Scheduler) admit() {
	free := s.cfg.MaxSlots - s.b.width
	srcs, srch, owners := s.joinSources[:0], s.joinSearches[:0], s.joinOwners[:0]
	full := 0
	for _, c := range s.pending {
		for c.next < len(c.sources) {
			w := c.searches[c.next].Width()
			if w > free {
				break
			}
			free -= w
			srcs = append(srcs, c.sources[c.next])
			srch = append(srch, c.searches[c.next])
			owners = append(owners, c)
			c.next++
		}
		if c.next < len(c.sources) {
			break // the rest wait, in order
		}
		full++
	}
	s.joinSources, s.joinSearches, s.joinOwners = srcs, srch, owners
	if len(srcs) == 0 {
		return
	}
	// Calls whose rows have all joined leave the queue.
	clear(s.pending[:full])
	s.pending = s.pending[full:]
	s.queued.Add(-int64(full))
	err := s.b.Add(srcs, srch)
	if err == nil {
		s.joined.Add(uint64(len(srcs)))
		for i, search := range srch {
			s.owner[search] = owners[i]
			owners[i].left++
		}
	} else {
		// The rows did not join and the batch is as it was: fail the
		// calls that tried (their earlier rows leave too).
		err = fmt.Errorf("decode: scheduler joining rows: %w", err)
		for _, c := range owners {
			s.fail(c, err)
		}
	}
	clear(srcs)
	clear(srch)
	clear(owners)
}

// failAll ends every call with rows in the batch after a failed step, and
// empties the batch; calls with no row in it stay queued.
func (s *Scheduler) failAll(err error) {
	for search, c := range s.owner {
		delete(s.owner, search)
		if !c.finished {
			s.unqueue(c)
			s.finish(c, err)
		}
	}
	s.b.Reset()
}

// finish answers a call.
func (s *Scheduler) finish(c *call, err error) {
	c.finished, c.err = true, err
	close(c.done)
}
