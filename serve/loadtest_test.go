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
	// The server runs in this process: both CPU figures are this
	// process's, one from getrusage, one from the process collector.
	if r.ClientCPU <= 0 || r.ServerCPU <= 0 {
		t.Errorf("CPU: clients %.3f cores, server %.3f", r.ClientCPU, r.ServerCPU)
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

// TestCountTokens: the load test's token count reads the one "tokens"
// array of an answer, whatever the other fields hold.
func TestCountTokens(t *testing.T) {
	cases := []struct {
		answer string
		n      int
		err    string
	}{
		{`{"model":"m","results":[{"input":"a","source_ids":[4],"tokens":[5,6,2],"text":"xy","attention":[[1],[1],[1]]}]}`, 3, ""},
		{`{"results":[{"input":"\"tokens\":[1,2]","tokens":[7],"text":""}]}`, 1, ""},
		{`{"results":[{"tokens":[],"attention":[]}]}`, 0, ""},
		{`{"results":[{"tokens":[1]},{"tokens":[2]}]}`, 0, "want one result with tokens"},
		{`{"results":[]}`, 0, "want one result with tokens"},
		{`{"results":[{"tokens":[1,2`, 0, "the tokens array does not end"},
	}
	for _, c := range cases {
		n, err := countTokens([]byte(c.answer))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %d, %v; want an error saying %q", c.answer, n, err, c.err)
			}
			continue
		}
		if err != nil || n != c.n {
			t.Errorf("%s: %d, %v; want %d", c.answer, n, err, c.n)
		}
	}
}
