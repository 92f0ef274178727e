package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/runtime"
	"github.com/attnx/attnx/translate"
)

// soakFixture is a small model with stacked layers: Bahdanau, H=13, L=2,
// Vs=19, Vt=23.
const soakFixture = "../testdata/fixtures/bahdanau_b4_l2/checkpoint.pt"

// soakModel exports soakFixture (with greedy.onnx) into a temporary dir.
func soakModel(t *testing.T) string {
	t.Helper()
	testenv.ORT(t, runtime.Init())
	dir := filepath.Join(t.TempDir(), "model")
	if _, err := modeldir.Export(soakFixture, dir, modeldir.Options{Greedy: true}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// soakSource is input number i: 1 to 12 ids in [4, 19), so that the
// translator's workspaces see many (batch, src_len) shapes.
func soakSource(i int) [][]int64 {
	n := 1 + i%12
	row := make([]int64, n)
	for j := range row {
		row[j] = int64(4 + (i*7+j*3)%15)
	}
	return [][]int64{row}
}

// within reports whether b grew from a by less than frac, or by less than
// slack bytes (for numbers so small that a fraction means nothing).
func within(a, b uint64, frac float64, slack uint64) bool {
	return b <= a+slack || growth(a, b) < frac
}

// TestSoakTranslatorNoLeak runs 20,000 translations through one Translator
// from 8 goroutines and samples the Go heap (after GC) and the RSS at the
// start, after a warm-up of 2,000, half way and at the end: over the second
// half neither may grow by 5% (or, for the tiny Go heap, 256 KiB). Every
// result must equal the first translation of the same input.
func TestSoakTranslatorNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: 20,000 translations")
	}
	dir := soakModel(t)
	start := sampleMem()
	tr, err := translate.Open(dir, translate.Options{Engine: translate.EngineSteps, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()

	// The expected output of every distinct input (i%12 and the ids
	// pattern repeat every 60 inputs).
	want := map[int]string{}
	for i := 0; i < 60; i++ {
		res, err := tr.TranslateIDs(ctx, soakSource(i))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = fmt.Sprint(res[0].Tokens)
	}

	const (
		total   = 20000
		warmup  = 2000
		workers = 8
	)
	var next atomic.Int64
	var failed atomic.Value
	runUntil := func(limit int64) {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= limit || failed.Load() != nil {
						return
					}
					res, err := tr.TranslateIDs(ctx, soakSource(int(i)))
					if err != nil {
						failed.Store(fmt.Sprintf("translation %d: %v", i, err))
						return
					}
					if got := fmt.Sprint(res[0].Tokens); got != want[int(i%60)] {
						failed.Store(fmt.Sprintf("translation %d: %s, want %s", i, got, want[int(i%60)]))
						return
					}
				}
			}()
		}
		wg.Wait()
		if f := failed.Load(); f != nil {
			t.Fatal(f)
		}
	}
	t0 := time.Now()
	runUntil(warmup)
	warm := sampleMem()
	runUntil(total / 2)
	half := sampleMem()
	runUntil(total)
	end := sampleMem()
	elapsed := time.Since(t0)
	t.Logf("%d translations, %d goroutines, %v (%.0f/s)", total, workers, elapsed.Round(time.Millisecond), total/elapsed.Seconds())
	t.Logf("start:   %v", start)
	t.Logf("warm-up: %v (after %d)", warm, warmup)
	t.Logf("half:    %v (after %d)", half, total/2)
	t.Logf("end:     %v (after %d); second half: heap %+.2f%%, RSS %+.2f%%", end, total, 100*growth(half.heap, end.heap), 100*growth(half.rss, end.rss))
	if !within(half.heap, end.heap, 0.05, 256<<10) {
		t.Errorf("Go heap grew from %v to %v over the second half", half, end)
	}
	if !within(half.rss, end.rss, 0.05, 0) {
		t.Errorf("RSS grew from %v to %v over the second half", half, end)
	}
}

// TestOpenTranslateCloseNoLeak opens a Translator, translates a batch and
// closes it 200 times (ATTNX_SOAK_OPEN_ITERS=N for more), alternating the
// step and loop engines: RSS over the second half may grow by less than 5%
// or 4 MiB.
func TestOpenTranslateCloseNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: 200 open/close cycles")
	}
	dir := soakModel(t)
	ctx := context.Background()
	batch := [][]int64{{4, 5, 6}, {7, 8, 9, 10, 11, 12}, {13}}
	iters := 200
	if n, err := strconv.Atoi(os.Getenv("ATTNX_SOAK_OPEN_ITERS")); err == nil && n >= 40 {
		iters = n - n%40 // more cycles, to tell a slow leak from noise
	}
	var samples []memSample
	start := sampleMem()
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		engine := translate.EngineSteps
		if i%2 == 1 {
			engine = translate.EngineLoop
		}
		tr, err := translate.Open(dir, translate.Options{Engine: engine, Threads: 1})
		if err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
		if _, err := tr.TranslateIDs(ctx, batch); err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
		if err := tr.Close(); err != nil {
			t.Fatalf("iteration %d: close: %v", i, err)
		}
		if _, err := tr.TranslateIDs(ctx, batch); err == nil {
			t.Fatalf("iteration %d: a closed translator translated", i)
		}
		if (i+1)%(iters/10) == 0 {
			samples = append(samples, sampleMem())
		}
	}
	mid, end := samples[len(samples)/2-1], samples[len(samples)-1]
	t.Logf("%d open/translate/close cycles in %v", iters, time.Since(t0).Round(time.Millisecond))
	t.Logf("start: %v; after %d: %v; after %d: %v; second half: heap %+.2f%%, RSS %+.2f%%",
		start, iters/2, mid, iters, end, 100*growth(mid.heap, end.heap), 100*growth(mid.rss, end.rss))
	for i, s := range samples {
		t.Logf("  after %4d: %v", iters/10*(i+1), s)
	}
	if !within(mid.rss, end.rss, 0.05, 4<<20) {
		t.Errorf("RSS grew from %v to %v over the last %d open/close cycles", mid, end, iters/2)
	}
	if !within(mid.heap, end.heap, 0.05, 256<<10) {
		t.Errorf("Go heap grew from %v to %v over the last %d open/close cycles", mid, end, iters/2)
	}
}

// TestMaxSourceLenRefusesLongSources: the configured source limit of the
// translate API refuses a longer row by its index, before running, and
// leaves the translator usable. (The CLI has no flag for it; its limit on
// stdin is the line length, in cmd/attnx's bad-input table.)
func TestMaxSourceLenRefusesLongSources(t *testing.T) {
	dir := soakModel(t)
	tr, err := translate.Open(dir, translate.Options{MaxSourceLen: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = tr.TranslateIDs(context.Background(), [][]int64{{4, 5}, {4, 5, 6, 7, 8, 9}})
	var ie *translate.InputError
	if !asInputError(err, &ie) || ie.Row != 1 || ie.Msg != "6 tokens, more than the limit MaxSourceLen = 5" {
		t.Fatalf("error %v, want an InputError for row 1 naming the limit", err)
	}
	if _, err := tr.TranslateIDs(context.Background(), [][]int64{{4, 5, 6, 7, 8}}); err != nil {
		t.Fatalf("a source at the limit: %v", err)
	}
}
