package serve

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunLoad loads a server of the demo model with 3 clients for a short
// while: every request is answered, the figures are consistent, and with
// batching off the server decoded one batch of one row per request.
func TestRunLoad(t *testing.T) {
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demoModel(t)}}})
	r, err := RunLoad(context.Background(), LoadConfig{
		URL: hs.URL, Sentences: demoInputs(t), Clients: 3, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests == 0 || r.Failed != 0 || r.FirstError != "" {
		t.Fatalf("%d requests answered, %d failed (%s)", r.Requests, r.Failed, r.FirstError)
	}
	if r.Seconds < 0.3 || r.SentencesPerSec != float64(r.Requests)/r.Seconds ||
		r.TokensPerSec < 6*r.SentencesPerSec || r.P50 <= 0 || r.P99 < r.P50 {
		t.Errorf("inconsistent figures: %+v", r)
	}
	// Every request was one batch of one row. The histogram is first read
	// once measuring has begun, so a few measured batches may be missed,
	// but only a request in flight per client can add one.
	if len(r.BatchRows) != 1 || r.BatchRows[1] == 0 || r.BatchRows[1] > uint64(r.Requests+r.Clients) {
		t.Errorf("batch sizes %v for %d requests from %d clients", r.BatchRows, r.Requests, r.Clients)
	}

	_, err = RunLoad(context.Background(), LoadConfig{URL: hs.URL, Model: "nope", Sentences: []string{"1"}, Clients: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), `first request: 404 Not Found: {"error":"unknown model \"nope\"`) {
		t.Errorf("unknown model: %v", err)
	}
}
