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

	// A server whose default is beam search (a toolkit model's, or
	// --beam) answers with the result's n-best hypotheses too.
	three, two := 3, 2
	_, bs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demoModel(t)}}, Decoding: Decoding{Beam: &three, NBest: &two}})
	rb, err := RunLoad(context.Background(), LoadConfig{
		URL: bs.URL, Sentences: demoInputs(t), Clients: 1, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("beam search by default: %v", err)
	}
	if rb.Requests == 0 || rb.Failed != 0 || rb.TokensPerSec < 6*rb.SentencesPerSec {
		t.Errorf("beam search by default: %d requests, %d failed (%s), %.1f tokens/s at %.1f sentences/s", rb.Requests, rb.Failed, rb.FirstError, rb.TokensPerSec, rb.SentencesPerSec)
	}

	_, err = RunLoad(context.Background(), LoadConfig{URL: hs.URL, Model: "nope", Sentences: []string{"1"}, Clients: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), `first request: 404 Not Found: {"error":"unknown model \"nope\"`) {
		t.Errorf("unknown model: %v", err)
	}
}

// TestCountTokens: the load test's token count reads the "tokens" array
// of an answer's one result, whatever the other fields hold, its
// hypotheses' tokens (beam search) included.
func TestCountTokens(t *testing.T) {
	cases := []struct {
		answer string
		n      int
		err    string
	}{
		{`{"model":"m","results":[{"input":"a","source_ids":[4],"tokens":[5,6,2],"text":"xy","attention":[[1],[1],[1]]}]}`, 3, ""},
		{`{"results":[{"input":"\"tokens\":[1,2] {\"input\":","tokens":[7],"text":""}]}`, 1, ""},
		{`{"results":[{"input":"","tokens":[],"attention":[]}]}`, 0, ""},
		// A beam search's answer: the result's tokens, then its n-best.
		{`{"model":"m","results":[{"input":"a","source_ids":[4],"tokens":[5,6,2],"text":"xy","hypotheses":[{"tokens":[5,6,2],"text":"xy","score":-1.5}],"score_base":"e"}]}`, 3, ""},
		{`{"results":[{"input":"a","tokens":[5,2],"text":"x","hypotheses":[{"tokens":[5,2],"text":"x"},{"tokens":[6,7,8,2],"text":"yzw"}]}]}`, 2, ""},
		{`{"results":[{"input":"a","tokens":[1]},{"input":"b","tokens":[2]}]}`, 0, "want one result with tokens"},
		{`{"results":[]}`, 0, "want one result with tokens"},
		{`{"results":[{"input":"a","text":""}]}`, 0, "want one result with tokens"},
		{`{"results":[{"input":"a","tokens":[1,2`, 0, "the tokens array does not end"},
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
