package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/stepgate"
	"github.com/attnx/attnx/translate"
	dto "github.com/prometheus/client_model/go"
)

// TestBatchingMatchesTranslator sends 1,000 requests (one to three inputs,
// three max_len settings, one request in five a beam search of width 3
// listing 2 hypotheses) from 32 concurrent clients to a server with
// continuous batching on and a batch of at most 16 rows, and compares
// every result with a lone Translator call on that input: tokens, text,
// source and hypotheses exactly, attention and scores within 1e-5.
func TestBatchingMatchesTranslator(t *testing.T) {
	demo := demoModel(t)
	sentences := demoInputs(t)
	maxLens := []int{0, 6, 40}
	const beam, nBest = 3, 2
	// want[b][k][s]: b = 1 for beam search.
	var want [2][]map[string]translate.ResultJSON
	for b := range want {
		want[b] = make([]map[string]translate.ResultJSON, len(maxLens))
		for k, m := range maxLens {
			opt := translate.Options{MaxLen: m}
			if b == 1 {
				opt.Beam, opt.NBest = beam, nBest
			}
			tr, err := translate.Open(demo, opt)
			if err != nil {
				t.Fatal(err)
			}
			want[b][k] = map[string]translate.ResultJSON{}
			for _, s := range sentences {
				res, err := tr.Translate(context.Background(), []string{s})
				if err != nil {
					t.Fatal(err)
				}
				want[b][k][s] = res[0].JSON(s)
			}
			tr.Close()
		}
	}
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}}, Batching: true, MaxBatchRows: 16, MaxOutLen: 60})

	const requests, clients = 1000, 32
	type request struct {
		k      int // index into maxLens
		b      int // 1: beam search
		attn   bool
		inputs []string
	}
	reqs := make(chan request, requests)
	inputs := 0
	for i := 0; i < requests; i++ {
		// Three in four requests ask for the attention weights.
		r := request{k: (i / 3) % len(maxLens), b: min(i%5, 1) ^ 1, attn: i%4 != 3}
		for j := 0; j <= i%3; j++ {
			r.inputs = append(r.inputs, sentences[(i*7+j*31)%len(sentences)])
		}
		inputs += len(r.inputs)
		reqs <- r
	}
	close(reqs)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	var failed atomic.Int32
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range reqs {
				req := Request{Inputs: r.inputs, Attention: &r.attn}
				if maxLens[r.k] > 0 {
					req.MaxLen = &maxLens[r.k]
				}
				if r.b == 1 {
					req.Beam, req.NBest = new(beam), new(nBest)
				}
				body, _ := json.Marshal(req)
				resp, err := client.Post(hs.URL+PathTranslate, "application/json", strings.NewReader(string(body)))
				if err != nil {
					t.Error(err)
					failed.Add(1)
					return
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("%s: %d %s %v", body, resp.StatusCode, data, err)
					failed.Add(1)
					continue
				}
				var got Response
				if err := json.Unmarshal(data, &got); err != nil || len(got.Results) != len(r.inputs) {
					t.Errorf("%s: answer %s: %v", body, data, err)
					failed.Add(1)
					continue
				}
				for i, res := range got.Results {
					w := want[r.b][r.k][r.inputs[i]]
					if !r.attn {
						w = unasked(w)
					}
					if d := jsonDiff(res, w); d != "" {
						t.Errorf("%s, result %d: %s", body, i, d)
						failed.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		return
	}
	st := s.models["dates"].backend.(SchedulingBackend).Stats()
	if st.Joined != uint64(inputs) || st.Removed != 0 || st.Queued != 0 {
		t.Errorf("scheduler stats %+v: want %d rows joined, none removed, none queued", st, inputs)
	}
	h := histogram(t, s, MetricBatchRows, map[string]string{"model": "dates"})
	if h.GetSampleCount() != st.Steps || h.GetSampleCount() == h.GetBucket()[0].GetCumulativeCount() {
		t.Errorf("batch-size histogram: %d steps (scheduler: %d), %d of one row: no step decoded rows together", h.GetSampleCount(), st.Steps, h.GetBucket()[0].GetCumulativeCount())
	}
	if h.GetSampleSum() > float64(16*h.GetSampleCount()) {
		t.Errorf("batch-size histogram: %g rows in %d steps, more than 16 a step", h.GetSampleSum(), h.GetSampleCount())
	}
	t.Logf("%d requests, %d inputs, %d decoder steps, %.1f rows a step on average", requests, inputs, st.Steps, h.GetSampleSum()/float64(h.GetSampleCount()))
}

// histogram reads a histogram of s's registry.
func histogram(t *testing.T, s *Server, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	m := gathered(t, s, name, labels)
	if m == nil {
		t.Fatalf("no %s%v", name, labels)
	}
	return m.GetHistogram()
}

// jsonDiff says how got differs from want: "" when every field is equal and
// the attention weights agree within 1e-5.
func jsonDiff(got, want translate.ResultJSON) string {
	ga, wa := got.Attention, want.Attention
	got.Attention, want.Attention = nil, nil
	// Scores are sums of log_probs, and the tokens' log-probs come from
	// another batch (or engine): within 1e-5 too.
	near := func(g, w *float32) {
		if math.Abs(float64(*g-*w)) <= 1e-5 {
			*g = *w
		}
	}
	nearAll := func(g, w []float32) []float32 {
		g = slices.Clone(g)
		for k := range min(len(g), len(w)) {
			near(&g[k], &w[k])
		}
		return g
	}
	gh, wh := slices.Clone(got.Hypotheses), slices.Clone(want.Hypotheses)
	for i := range min(len(gh), len(wh)) {
		near(&gh[i].Score, &wh[i].Score)
		near(&gh[i].NormalizedScore, &wh[i].NormalizedScore)
		gh[i].PositionalScores = nearAll(gh[i].PositionalScores, wh[i].PositionalScores)
	}
	got.Hypotheses, want.Hypotheses = gh, wh
	for _, p := range [][2]**float32{{&got.Score, &want.Score}, {&got.NormalizedScore, &want.NormalizedScore}} {
		if *p[0] != nil && *p[1] != nil {
			g := **p[0]
			near(&g, *p[1])
			*p[0] = &g
		}
	}
	got.PositionalScores = nearAll(got.PositionalScores, want.PositionalScores)
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%+v, lone Translator %+v", got, want)
	}
	if d := fixtures.AttentionDiff(ga, wa, 1e-5); d != "" {
		return d + " (want: the lone Translator's)"
	}
	return ""
}

// gatedServer starts a batching server of cfg whose decoder steps pass
// through a gate, and returns its scheduler's stats.
func gatedServer(t *testing.T, cfg Config) (*Server, string, *stepgate.Gate, func() decode.SchedulerStats) {
	t.Helper()
	g := stepgate.New()
	cfg.Batching = true
	cfg.Open = func(dir string, c *Config, obs BatchObserver) (Backend, error) {
		return OpenBatchingBackend(dir, c, func(rows int) { obs(rows); g.Observe(rows) })
	}
	s, hs := startServer(t, cfg)
	// Cleanups run last-in first-out: the gate opens before the server
	// closes.
	t.Cleanup(g.Open)
	name := cfg.Models[0].Name
	return s, hs.URL, g, func() decode.SchedulerStats { return s.models[name].backend.(SchedulingBackend).Stats() }
}

// TestBatchingCancelLeavesBatch: a request whose client goes away while its
// row decodes leaves the batch at a step boundary (counted by
// attnx_serve_rows_removed_total and as status 499) while the request
// beside it decodes on and is answered what a lone Translator call gives.
func TestBatchingCancelLeavesBatch(t *testing.T) {
	fixture := fixtureModel(t)
	s, url, g, stats := gatedServer(t, Config{Models: []ModelDir{{Name: "ids", Dir: fixture}}, MaxOutLen: 4000})
	g.Arm(true)
	// Random weights rarely emit EOS: both rows would run 4000 steps.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	goneA := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+PathTranslate, strings.NewReader(`{"ids": [[4, 5, 6]], "max_len": 4000}`))
		req.Header.Set("Content-Type", "application/json")
		_, err := http.DefaultClient.Do(req)
		goneA <- err
	}()
	if n := g.Entered(); n != 1 {
		t.Fatalf("first step decodes %d rows, want 1", n)
	}
	answerB := postAsync(t, url+PathTranslate, `{"ids": [[7, 8, 9, 10]], "max_len": 3000, "attention": true}`)
	waitFor(t, "the second request to queue", func() bool { return s.models["ids"].backend.(SchedulingBackend).QueueDepth() == 1 })
	// Its row joins at the next boundary.
	if n := g.Step(); n != 2 {
		t.Fatalf("the step after the second request joined decodes %d rows, want 2", n)
	}
	steps := 2
	cancel()
	if err := <-goneA; err == nil {
		t.Fatal("the cancelled request was answered")
	}
	// The server notices the closed connection on its own time; step
	// slowly until the row has left.
	deadline := time.Now().Add(10 * time.Second)
	for stats().Removed == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled request's row is still in the batch after %d steps", steps)
		}
		time.Sleep(5 * time.Millisecond)
		if n := g.Step(); n != 1 && stats().Removed > 0 {
			t.Fatalf("%d rows after the row was removed, want 1", n)
		}
		steps++
	}
	if steps >= 3000 {
		t.Fatalf("%d steps: the row may have finished rather than left", steps)
	}
	g.Arm(false)
	g.Release()
	a := <-answerB
	if a.code != 200 {
		t.Fatalf("the other request: %d %s", a.code, a.body)
	}
	tr, err := translate.Open(fixture, translate.Options{MaxLen: 3000})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	lone, err := tr.TranslateIDs(context.Background(), [][]int64{{7, 8, 9, 10}})
	if err != nil {
		t.Fatal(err)
	}
	if d := jsonDiff(decodeResponse(t, a.body).Results[0], lone[0].JSON("7 8 9 10")); d != "" {
		t.Errorf("the other request: %s", d)
	}
	waitFor(t, "the cancelled request to be counted as 499", func() bool {
		return counterValue(t, s, MetricRequests, map[string]string{"model": "ids", "code": "499"}) == 1
	})
	if n := counterValue(t, s, MetricRowsRemoved, map[string]string{"model": "ids"}); n != 1 {
		t.Errorf("%s = %v, want 1", MetricRowsRemoved, n)
	}
	// Thousands of steps over few batch shapes: the binding cache hits.
	hits := counterValue(t, s, MetricBindingLookups, map[string]string{"model": "ids", "result": "hit"})
	misses := counterValue(t, s, MetricBindingLookups, map[string]string{"model": "ids", "result": "miss"})
	if misses < 1 || hits < 100*misses {
		t.Errorf("%s: %v hits, %v misses; want the cache to serve nearly every step", MetricBindingLookups, hits, misses)
	}
	t.Logf("the cancelled row left after %d steps of its 4000; binding cache %v hits, %v misses", steps, hits, misses)
}

// TestBatchingQueueFull: with the batch full (one row) and one request
// waiting, the next request gets 429 at once from the scheduler; the
// admitted ones are answered.
func TestBatchingQueueFull(t *testing.T) {
	s, url, g, _ := gatedServer(t, Config{Models: []ModelDir{{Name: "m", Dir: fixtureModel(t)}}, MaxBatchRows: 1, MaxQueue: 1})
	g.Arm(true)
	first := postAsync(t, url+PathTranslate, `{"ids": [[3, 4]]}`)
	g.Entered()
	second := postAsync(t, url+PathTranslate, `{"ids": [[5]]}`)
	waitFor(t, "the second request to queue", func() bool { return s.models["m"].backend.(SchedulingBackend).QueueDepth() == 1 })
	code, body := post(t, url+PathTranslate, `{"ids": [[6]]}`)
	want := `{"error":"model \"m\" is busy (queue full: 1 requests waiting for room in a batch of 1 rows): retry later"}` + "\n"
	if code != 429 || body != want {
		t.Errorf("third request: %d %q\nwant 429 %q", code, body, want)
	}
	fams := scrape(t, url)
	if m := findMetric(fams, MetricQueueDepth, map[string]string{"model": "m"}); m.GetGauge().GetValue() != 1 {
		t.Errorf("%s = %v with one request waiting", MetricQueueDepth, m.GetGauge().GetValue())
	}
	g.Arm(false)
	g.Release()
	for _, ch := range []<-chan answer{first, second} {
		if a := <-ch; a.code != 200 {
			t.Errorf("admitted request: %d %s", a.code, a.body)
		}
	}
	if n := counterValue(t, s, MetricRequests, map[string]string{"model": "m", "code": "429"}); n != 1 {
		t.Errorf("%s{code=429} = %v, want 1", MetricRequests, n)
	}
}

// TestBatchingDeadline: a request whose deadline (the request timeout)
// passes while its row decodes, and one whose deadline passes while it
// waits to join, both get 504; the decoding row leaves the batch, and the
// server goes on answering.
func TestBatchingDeadline(t *testing.T) {
	s, url, g, stats := gatedServer(t, Config{Models: []ModelDir{{Name: "m", Dir: fixtureModel(t)}}, MaxBatchRows: 1, RequestTimeout: 100 * time.Millisecond})
	g.Arm(true)
	decoding := postAsync(t, url+PathTranslate, `{"ids": [[3, 4]]}`)
	g.Entered()
	// Random weights rarely emit EOS: were the waiting row to join, it
	// would still decode when its cancellation arrives.
	waiting := postAsync(t, url+PathTranslate, `{"ids": [[5]], "max_len": 500}`)
	waitFor(t, "the second request to queue", func() bool { return s.models["m"].backend.(SchedulingBackend).QueueDepth() == 1 })
	time.Sleep(200 * time.Millisecond) // both deadlines pass while the step is held
	g.Arm(false)
	g.Release()
	want := `{"error":"not answered within the request timeout of 100ms"}` + "\n"
	for name, ch := range map[string]<-chan answer{"decoding": decoding, "waiting": waiting} {
		if a := <-ch; a.code != 504 || a.body != want {
			t.Errorf("%s request: %d %q, want 504 %q", name, a.code, a.body, want)
		}
	}
	// The waiting row joins, and is removed at the next boundary, when the
	// decoding row's cancellation reaches the scheduler before its own:
	// every row that joined left unfinished.
	if st := stats(); st.Removed < 1 || st.Removed != st.Joined || st.Queued != 0 {
		t.Errorf("scheduler stats %+v: want every row that joined removed, none queued", st)
	}
	if code, body := post(t, url+PathTranslate, `{"ids": [[6]], "max_len": 3}`); code != 200 {
		t.Errorf("a request afterwards: %d %s", code, body)
	}
}
