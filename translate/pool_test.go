package translate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/fixtures"
)

func repeated(n int, id int64) []int64 {
	row := make([]int64, n)
	for i := range row {
		row[i] = id
	}
	return row
}

// poolModel writes a fixture's model directory and returns it with its
// decode.Model, to size the pool limits with.
func poolModel(t *testing.T) (string, *decode.Model) {
	t.Helper()
	dir, _ := fixtureModel(t, fixtures.List(t)[1])
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return dir, tr.pool.m
}

// TestPoolCapsIdleBytes: the idle executors never hold more than
// MaxIdleBytes, whatever shapes come, and an idle executor serves any
// batch it has room for (capacity, not shape, decides).
func TestPoolCapsIdleBytes(t *testing.T) {
	needORT(t)
	dir, m := poolModel(t)
	capBytes := 3 * m.Bytes(1, 40)
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps, MaxLen: 2, MaxIdleBytes: capBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	for n := 1; n <= 40; n++ {
		if _, err := tr.TranslateIDs(ctx, [][]int64{repeated(n, 5)}); err != nil {
			t.Fatal(err)
		}
		if idle, b, live := tr.pool.stats(); b > capBytes || live != 0 || idle == 0 {
			t.Fatalf("after a source of %d: %d idle executors of %d bytes (cap %d), %d live", n, idle, b, capBytes, live)
		}
	}
	// The 40-token executor is idle now: smaller batches of any shape that
	// fits its 1 slot and 40 positions reuse it.
	made := tr.pool.made
	for _, n := range []int{40, 3, 17, 33, 1} {
		if _, err := tr.TranslateIDs(ctx, [][]int64{repeated(n, 6)}); err != nil {
			t.Fatal(err)
		}
	}
	if tr.pool.made != made {
		t.Errorf("%d executors made for batches an idle one had room for", tr.pool.made-made)
	}
	// Two rows do not fit one slot: a new one is made, and the cap holds.
	if _, err := tr.TranslateIDs(ctx, [][]int64{repeated(4, 5), repeated(9, 5)}); err != nil {
		t.Fatal(err)
	}
	if _, b, _ := tr.pool.stats(); tr.pool.made != made+1 || b > capBytes {
		t.Errorf("made %d (want %d), idle bytes %d (cap %d)", tr.pool.made, made+1, b, capBytes)
	}
}

// TestPoolBoundsLiveBytes: a batch that alone needs more than MaxLiveBytes
// is refused with an error naming the limit; one that would go over with
// others in flight waits for them (here until its deadline); concurrent
// calls never hold more than the bound together.
func TestPoolBoundsLiveBytes(t *testing.T) {
	needORT(t)
	dir, m := poolModel(t)
	limit := m.Bytes(2, 16)
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps, MaxLen: 3, MaxLiveBytes: limit, BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	two := [][]int64{repeated(8, 5), repeated(3, 7)}

	_, err = tr.TranslateIDs(ctx, [][]int64{repeated(8, 5), repeated(8, 6), repeated(8, 7)})
	if err == nil || !strings.Contains(err.Error(), "more than the limit of") || !strings.Contains(err.Error(), "use a smaller BatchSize or Beam, or a larger MaxLiveBytes") {
		t.Errorf("a batch over the bound: %v", err)
	}

	held, err := tr.pool.get(ctx, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = tr.TranslateIDs(short, two)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call while the budget is held: %v, want it to wait until its deadline", err)
	}
	tr.pool.put(held)
	want, err := tr.TranslateIDs(ctx, two)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				got, err := tr.TranslateIDs(ctx, two)
				if err != nil {
					errs <- err
					return
				}
				if got[0].Text != want[0].Text || len(got[1].Tokens) != len(want[1].Tokens) {
					errs <- errors.New("concurrent result differs")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if tr.pool.peakLive > limit {
		t.Errorf("live bytes peaked at %d, bound %d", tr.pool.peakLive, limit)
	}
}

// TestPoolSkipsIdleOverBudget: an idle executor too big for what the live
// budget has left is passed over for a new one of the size needed, instead
// of waiting.
func TestPoolSkipsIdleOverBudget(t *testing.T) {
	needORT(t)
	dir, m := poolModel(t)
	big, small := m.Bytes(2, 16), m.Bytes(1, 2)
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps, MaxLen: 3, MaxLiveBytes: big + small - 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	held, err := tr.pool.get(ctx, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := m.NewExecutor(2, 16)
	if err != nil {
		t.Fatal(err)
	}
	tr.pool.put(idle) // idle now, never charged
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := tr.TranslateIDs(short, [][]int64{repeated(3, 5)}); err != nil {
		t.Fatalf("a small batch beside a small held executor: %v", err)
	}
	if n, _, _ := tr.pool.stats(); n != 2 || tr.pool.made != 2 {
		t.Errorf("%d idle, %d made: want the big one left idle and a new one made", n, tr.pool.made)
	}
	tr.pool.put(held)
}
