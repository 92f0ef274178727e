package decode_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/stepgate"
)

// gated returns a Scheduler of cfg whose steps pass through a gate.
func gated(t *testing.T, p *pair, cfg decode.SchedulerConfig) (*decode.Scheduler, *stepgate.Gate) {
	t.Helper()
	g := stepgate.New()
	cfg.Observe = g.Observe
	s := newScheduler(t, p, cfg)
	// Cleanups run last-in first-out: the gate opens before Close waits.
	t.Cleanup(g.Open)
	return s, g
}

func newScheduler(t *testing.T, p *pair, cfg decode.SchedulerConfig) *decode.Scheduler {
	t.Helper()
	ex, err := p.m.NewExecutor(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := decode.NewScheduler(ex, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestSchedulerMatchesLoneRows: calls of one to four rows from eight
// goroutines share a batch of at most six slots (so rows wait, join at
// step boundaries, and a call's rows may join over several), with greedy
// rows of different limits and beam-shaped rows of width three beside
// them; every greedy row decodes to its lone decode and every beam-shaped
// slot's log_probs to a lone run of its input history.
func TestSchedulerMatchesLoneRows(t *testing.T) {
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 11))
			type job struct {
				rows     [][]int64
				gs       []*decode.Greedy
				ks       []*tracker
				searches []decode.Search
			}
			jobs := make([]job, 40)
			for i := range jobs {
				j := &jobs[i]
				j.rows = randomRows(r, 1+r.IntN(4), p.vs, 7)
				for range j.rows {
					if r.IntN(8) == 0 {
						k := &tracker{width: 3, steps: 2 + r.IntN(5)}
						j.ks = append(j.ks, k)
						j.gs = append(j.gs, nil)
						j.searches = append(j.searches, k)
						continue
					}
					g := &decode.Greedy{SOS: sos, EOS: eos, MaxLen: 1 + r.IntN(12), KeepAttention: true}
					j.gs = append(j.gs, g)
					j.ks = append(j.ks, nil)
					j.searches = append(j.searches, g)
				}
			}
			var slots atomic.Int64
			s := newScheduler(t, p, decode.SchedulerConfig{MaxSlots: 6, MaxQueue: 64, Observe: func(n int) {
				if n > 6 {
					slots.Store(int64(n))
				}
			}})
			var wg sync.WaitGroup
			errs := make([]error, len(jobs))
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < len(jobs); i += 8 {
						errs[i] = s.Decode(context.Background(), jobs[i].rows, jobs[i].searches)
					}
				}()
			}
			wg.Wait()
			if n := slots.Load(); n != 0 {
				t.Errorf("a step decoded %d slots, more than MaxSlots 6", n)
			}
			rows := 0
			for i, j := range jobs {
				if errs[i] != nil {
					t.Fatalf("call %d: %v", i, errs[i])
				}
				for r, src := range j.rows {
					rows++
					if g := j.gs[r]; g != nil {
						checkLone(t, p, r, src, g)
						continue
					}
					k := j.ks[r]
					if k.err != nil {
						t.Errorf("call %d row %d: %v", i, r, k.err)
					}
					for _, rec := range k.log {
						if !within(rec.logProbs, p.forced(t, src, rec.inputs)) {
							t.Errorf("call %d row %d, inputs %v: log_probs differ from the lone run", i, r, rec.inputs)
						}
					}
				}
			}
			st := s.Stats()
			if st.Joined != uint64(rows) || st.Removed != 0 || st.Queued != 0 {
				t.Errorf("stats %+v: want %d rows joined, none removed, none queued", st, rows)
			}
		})
	}
}

// TestSchedulerCancelLeavesBatch: a call whose context is cancelled while
// its rows decode leaves the batch at a step boundary and returns
// context.Canceled; the call beside it decodes to its lone decode.
func TestSchedulerCancelLeavesBatch(t *testing.T) {
	p := testPairs(t)[0]
	s, g := gated(t, p, decode.SchedulerConfig{MaxSlots: 8, MaxQueue: 8})
	srcA, srcB := [][]int64{{3, 4, 5}}, [][]int64{{6, 7}, {8, 9, 10, 11}}
	// Neither call's rows reach EOS or their limits before the test is
	// done with them (the model and the sources are fixed).
	gA, sA := greedies([]int{3000}, true)
	gB, sB := greedies([]int{5000, 5000}, false)
	g.Arm(true)
	doneA := make(chan error, 1)
	go func() { doneA <- s.Decode(context.Background(), srcA, sA) }()
	if n := g.Entered(); n != 1 {
		t.Fatalf("first step decodes %d slots, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	doneB := make(chan error, 1)
	go func() { doneB <- s.Decode(ctx, srcB, sB) }()
	for s.QueueDepth() != 1 {
		time.Sleep(time.Millisecond)
	}
	// B's two rows join at the next boundary.
	g.Release()
	if n := g.Entered(); n != 3 {
		t.Fatalf("the step after B joined decodes %d slots, want 3", n)
	}
	cancel()
	// Step by step until they have left.
	steps := 0
	for n := 3; n != 1; n = g.Entered() {
		g.Release()
		if steps++; steps > 1000 {
			t.Fatal("the cancelled call's rows are still in the batch after 1000 steps")
		}
	}
	g.Arm(false)
	g.Release()
	if err := <-doneB; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v, want context.Canceled", err)
	}
	for i, g := range gB {
		if n := len(g.Tokens()); n == 0 || n >= 5000 {
			t.Errorf("cancelled row %d has %d tokens: want some, fewer than its limit", i, n)
		}
	}
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	if n := len(gA[0].Tokens()); n != 3000 {
		t.Errorf("the other call's row has %d tokens, want its limit 3000 (it must outlive the cancelled one)", n)
	}
	checkLone(t, p, 0, srcA[0], gA[0])
	if st := s.Stats(); st.Removed != 2 || st.Joined != 3 {
		t.Errorf("stats %+v: want 3 rows joined, 2 removed", st)
	}
}

// TestSchedulerQueueFull: with the batch full and one call waiting, the
// next call fails at once with ErrQueueFull; the admitted ones finish.
func TestSchedulerQueueFull(t *testing.T) {
	p := testPairs(t)[0]
	s, g := gated(t, p, decode.SchedulerConfig{MaxSlots: 1, MaxQueue: 1})
	g.Arm(true)
	gA, sA := greedies([]int{4}, false)
	gB, sB := greedies([]int{3}, false)
	done := make(chan error, 2)
	go func() { done <- s.Decode(context.Background(), [][]int64{{3}}, sA) }()
	g.Entered()
	go func() { done <- s.Decode(context.Background(), [][]int64{{4, 5}}, sB) }()
	for s.QueueDepth() != 1 {
		time.Sleep(time.Millisecond)
	}
	_, sC := greedies([]int{3}, false)
	err := s.Decode(context.Background(), [][]int64{{5}}, sC)
	if !errors.Is(err, decode.ErrQueueFull) {
		t.Errorf("third call: %v, want ErrQueueFull", err)
	}
	g.Arm(false)
	g.Release()
	for range 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if len(gA[0].Tokens()) == 0 || len(gB[0].Tokens()) == 0 {
		t.Error("an admitted call has no tokens")
	}
	if d := s.QueueDepth(); d != 0 {
		t.Errorf("queue depth %d after every call returned", d)
	}
}

// TestSchedulerDeadline: a call whose deadline passes while it waits in
// the queue, and one whose deadline passes while it decodes, both return
// context.DeadlineExceeded and leave; the scheduler goes on serving.
func TestSchedulerDeadline(t *testing.T) {
	p := testPairs(t)[0]
	s, g := gated(t, p, decode.SchedulerConfig{MaxSlots: 1, MaxQueue: 4})
	g.Arm(true)
	decoding, dc := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dc()
	waiting, wc := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer wc()
	_, sA := greedies([]int{5000}, false)
	// B's limit is out of reach: should its row join before its
	// cancellation reaches the scheduler, it must still be decoding then.
	_, sB := greedies([]int{5000}, false)
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { errA <- s.Decode(decoding, [][]int64{{3, 4}}, sA) }()
	g.Entered()
	go func() { errB <- s.Decode(waiting, [][]int64{{5}}, sB) }()
	<-decoding.Done()
	<-waiting.Done()
	g.Arm(false)
	g.Release()
	for name, ch := range map[string]chan error{"decoding": errA, "waiting": errB} {
		if err := <-ch; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s call: %v, want context.DeadlineExceeded", name, err)
		}
	}
	gC, sC := greedies([]int{6}, true)
	if err := s.Decode(context.Background(), [][]int64{{7, 8, 9}}, sC); err != nil {
		t.Fatal(err)
	}
	checkLone(t, p, 0, []int64{7, 8, 9}, gC[0])
	// The waiting call's row joins, and is removed at the next boundary,
	// when A's cancellation reaches the scheduler before B's does: every
	// row but C's left unfinished.
	if st := s.Stats(); st.Queued != 0 || st.Removed < 1 || st.Removed != st.Joined-1 {
		t.Errorf("stats %+v: want nothing queued, every row but the last call's removed", st)
	}
}

// TestSchedulerClose: Close waits for the call in progress, which
// finishes; later calls fail with ErrSchedulerClosed.
func TestSchedulerClose(t *testing.T) {
	p := testPairs(t)[0]
	s, g := gated(t, p, decode.SchedulerConfig{MaxSlots: 4, MaxQueue: 4})
	g.Arm(true)
	gA, sA := greedies([]int{7}, true)
	errA := make(chan error, 1)
	go func() { errA <- s.Decode(context.Background(), [][]int64{{3, 4}}, sA) }()
	g.Entered()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned with a call in progress")
	case <-time.After(10 * time.Millisecond):
	}
	g.Arm(false)
	g.Release()
	<-closed
	if err := <-errA; err != nil {
		t.Fatal(err)
	}
	checkLone(t, p, 0, []int64{3, 4}, gA[0])
	_, sB := greedies([]int{3}, false)
	if err := s.Decode(context.Background(), [][]int64{{3}}, sB); !errors.Is(err, decode.ErrSchedulerClosed) {
		t.Errorf("call after Close: %v, want ErrSchedulerClosed", err)
	}
	s.Close()
}

// TestSchedulerErrors: bad configurations and calls are refused with an
// error naming the fault.
func TestSchedulerErrors(t *testing.T) {
	p := testPairs(t)[0]
	ex, err := p.m.NewExecutor(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if _, err := decode.NewScheduler(ex, decode.SchedulerConfig{MaxSlots: 0, MaxQueue: 1}); err == nil {
		t.Error("MaxSlots 0 accepted")
	}
	s := newScheduler(t, p, decode.SchedulerConfig{MaxSlots: 2, MaxQueue: 2})
	_, one := greedies([]int{3}, false)
	cases := []struct {
		name     string
		sources  [][]int64
		searches []decode.Search
		want     string
	}{
		{"mismatch", [][]int64{{3}, {4}}, one, "decode: Decode got 2 sources and 1 searches"},
		{"empty source", [][]int64{{}}, one, "decode: source row 0 is empty; every row needs at least one token"},
		{"too wide", [][]int64{{3}}, []decode.Search{&tracker{width: 3, steps: 2}}, "decode: search 0 has width 3: want 1 to the scheduler's MaxSlots, 2"},
	}
	for _, c := range cases {
		if err := s.Decode(context.Background(), c.sources, c.searches); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Decode(ctx, [][]int64{{3}}, one); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if st := s.Stats(); st.Queued != 0 || st.Joined != 0 || st.Steps != 0 {
		t.Errorf("refused calls changed the stats: %+v", st)
	}
	if err := s.Decode(context.Background(), nil, nil); err != nil {
		t.Errorf("no rows: %v", err)
	}
}
