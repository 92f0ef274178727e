//go:build cgo

package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// soakFixture is a small model with stacked layers: Bahdanau, H=13, L=2,
// Vs=19, Vt=23.
const soakFixture = "../testdata/fixtures/bahdanau_b4_l2/checkpoint.pt"

// soakModel exports soakFixture (with greedy.onnx) into a temporary dir.
func soakModel(t *testing.T) string {
	t.Helper()
	testenv.ORT(t, onnxrun.Init())
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

// slope is the Theil-Sen slope of ys over xs: the median of the slopes
// between every two samples. A leak grows memory at each step, so every
// pair sees it; an allocator that takes one more arena in a single step
// (RSS up by some MiB between two samples and level after) moves only the
// pairs across that step, where a least-squares fit over 11 samples read
// one such step at the end as 140 KiB per 1000 translations of growth.
func slope(xs, ys []float64) float64 {
	var ss []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] != xs[i] {
				ss = append(ss, (ys[j]-ys[i])/(xs[j]-xs[i]))
			}
		}
	}
	if len(ss) == 0 {
		return 0
	}
	sort.Float64s(ss)
	if n := len(ss); n%2 == 1 {
		return ss[n/2]
	} else {
		return (ss[n/2-1] + ss[n/2]) / 2
	}
}

// leakedValueCost measures what leaking one small OrtValue costs outside
// the Go heap: it creates n float tensors of shape [1, 13] (a decoder
// state of the soak model), each over its own data, and returns the RSS
// they add less the Go heap they add, per value. That is what a forgotten
// Destroy leaves once the Go wrapper is collected (onnxruntime_go sets no
// finalizers): ONNX Runtime's OrtValue and tensor bookkeeping.
func leakedValueCost(t *testing.T, n int) float64 {
	t.Helper()
	before := sampleMem()
	vals := make([]interface{ Destroy() error }, 0, n)
	for i := 0; i < n; i++ {
		v, err := onnxrun.NewValue(onnxrun.NewFloat32([]int64{1, 13}, make([]float32, 13)))
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	after := sampleMem()
	for _, v := range vals {
		v.Destroy()
	}
	return ((float64(after.rss) - float64(before.rss)) - (float64(after.heap) - float64(before.heap))) / float64(n)
}

// TestSoakTranslatorNoLeak runs 22,000 translations through one Translator
// from 8 goroutines: 2,000 to warm up, then 20 rounds of 1,000, sampling
// after each the Go heap (after GC) and the RSS (after freed memory, Go's
// and the C allocator's, is returned to the system). The growth per 1,000
// translations, fitted by Theil-Sen (slope) over the last 10 rounds, must stay
// under half of what leaking one small OrtValue per translation costs
// outside the Go heap, measured in the same process afterwards: a leak of
// one tensor per call fails, while the allocators' noise, spread over 11
// samples, does not.
// The Go heap may grow by at most 16 bytes per translation. Every result
// must equal the first translation of the same input.
func TestSoakTranslatorNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: 22,000 translations")
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
		warmup  = 2000
		round   = 1000
		rounds  = 20
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
	samples := []memSample{sampleMem()}
	for r := 1; r <= rounds; r++ {
		runUntil(warmup + int64(r*round))
		samples = append(samples, sampleMem())
	}
	elapsed := time.Since(t0)
	// The fit covers the second half: in the first, the allocators'
	// arenas and the translator's workspaces still settle (RSS grows by
	// some 30 KiB per 1000 and then levels off).
	var xs, rss, heap []float64
	for i, s := range samples[rounds/2:] {
		xs = append(xs, float64(i)) // in thousands of translations
		rss = append(rss, float64(s.rss))
		heap = append(heap, float64(s.heap))
	}
	rssRate, heapRate := slope(xs, rss), slope(xs, heap)
	cost := leakedValueCost(t, 50000)
	total := warmup + rounds*round
	t.Logf("%d translations, %d goroutines, %v (%.0f/s)", total, workers, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	t.Logf("start: %v; after the warm-up: %v; end: %v", start, samples[0], samples[len(samples)-1])
	var series []string
	for _, s := range samples {
		series = append(series, fmt.Sprintf("%.0f", float64(s.rss)/1024))
	}
	t.Logf("RSS (KiB) after each 1000: %s", strings.Join(series, " "))
	t.Logf("growth per 1000 translations over the last %d (Theil-Sen, %d samples): RSS %+.1f KiB, Go heap %+.2f KiB", rounds/2*round, len(xs), rssRate/1024, heapRate/1024)
	t.Logf("one leaked [1,13] float OrtValue costs %.0f bytes of RSS outside the Go heap: a leak of one per translation would grow RSS by %.1f KiB per 1000", cost, cost*round/1024)
	if cost < 64 {
		t.Fatalf("calibration: 50,000 OrtValues added only %.0f bytes of RSS each outside the Go heap; the RSS readings cannot be trusted", cost)
	}
	if bound := cost * round / 2; rssRate > bound {
		t.Errorf("RSS grows by %.1f KiB per 1000 translations, over the bound %.1f KiB (half a leaked OrtValue per translation)\nsamples: %v", rssRate/1024, bound/1024, samples)
	}
	if bound := 16.0 * round; heapRate > bound {
		t.Errorf("Go heap grows by %.2f KiB per 1000 translations, over the bound %.2f KiB (16 bytes per translation)\nsamples: %v", heapRate/1024, bound/1024, samples)
	}
}

// TestOpenTranslateCloseNoLeak opens a Translator, translates a batch and
// closes it 200 times (ATTNX_SOAK_OPEN_ITERS=N for more), alternating the
// step and loop engines, sampling memory every tenth of the way. RSS
// growth per cycle, fitted by Theil-Sen (slope) over the second half, must
// stay under half of what one translator left open costs (measured in the
// same process afterwards): forgetting to close sessions fails, the
// allocators' noise does not. The Go heap may grow by less than 5% or
// 256 KiB over the second half.
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
	// open opens and uses translator number i without closing it.
	open := func(i int) *translate.Translator {
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
		return tr
	}
	var samples []memSample
	start := sampleMem()
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		tr := open(i)
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
	elapsed := time.Since(t0)
	// Calibration: what one translator left open costs.
	const held = 20
	before := sampleMem()
	var open20 []*translate.Translator
	for i := 0; i < held; i++ {
		open20 = append(open20, open(i))
	}
	after := sampleMem()
	for _, tr := range open20 {
		tr.Close()
	}
	cost := (float64(after.rss) - float64(before.rss)) / held

	mid, end := samples[len(samples)/2-1], samples[len(samples)-1]
	var xs, rss []float64
	for i, s := range samples[len(samples)/2-1:] {
		xs = append(xs, float64(i*iters/10))
		rss = append(rss, float64(s.rss))
	}
	rate := slope(xs, rss)
	t.Logf("%d open/translate/close cycles in %v", iters, elapsed.Round(time.Millisecond))
	t.Logf("start: %v; after %d: %v; after %d: %v; second half: heap %+.2f%%, RSS %+.2f%%",
		start, iters/2, mid, iters, end, 100*growth(mid.heap, end.heap), 100*growth(mid.rss, end.rss))
	for i, s := range samples {
		t.Logf("  after %4d: %v", iters/10*(i+1), s)
	}
	t.Logf("RSS growth per cycle over the second half (Theil-Sen, %d samples): %+.1f KiB; one translator left open costs %.0f KiB", len(xs), rate/1024, cost/1024)
	if cost < 64<<10 {
		t.Fatalf("calibration: %d open translators added only %.0f KiB of RSS each; the RSS readings cannot be trusted", held, cost/1024)
	}
	if rate > cost/2 {
		t.Errorf("RSS grows by %.1f KiB per open/close cycle, over the bound %.1f KiB (half an unclosed translator per cycle)", rate/1024, cost/2/1024)
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
	if !asInputError(err, &ie) || ie.Row != 1 || ie.Msg != "6 tokens" || ie.SourceLimit != 5 ||
		err.Error() != "translate: input row 1: 6 tokens, more than the limit MaxSourceLen = 5" {
		t.Fatalf("error %v, want an InputError for row 1 naming the limit", err)
	}
	if _, err := tr.TranslateIDs(context.Background(), [][]int64{{4, 5, 6, 7, 8}}); err != nil {
		t.Fatalf("a source at the limit: %v", err)
	}
}
