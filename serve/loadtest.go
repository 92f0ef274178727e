package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/valyala/fasthttp"
)

// LoadConfig describes one load-test run against a running server: Clients
// goroutines each send one single-sentence request after another, for
// Warmup (not measured) and then Duration.
type LoadConfig struct {
	// URL is the server's base URL, such as http://127.0.0.1:8080.
	URL string
	// Model names the model; empty means the server's default.
	Model string
	// Sentences are sent in turn, each client starting at its own offset.
	Sentences []string
	// Clients is the number of concurrent clients, at least 1.
	Clients int
	// Warmup and Duration bound the run; Duration must be positive.
	Warmup, Duration time.Duration
}

// LoadResult is what one run measured. Throughput counts the requests
// answered 200 during the measured part, over its length (from its start
// to the last answer of a request sent before its end).
type LoadResult struct {
	Clients    int
	Requests   int     // answered 200 while measuring
	Failed     int     // answered otherwise, or not at all
	FirstError string  // the first failure, for the report
	Seconds    float64 // length of the measured part
	// SentencesPerSec and TokensPerSec are sentences translated and output
	// tokens (EOS included) decoded per second.
	SentencesPerSec, TokensPerSec float64
	// P50 and P99 are latency percentiles of the measured requests, in
	// milliseconds.
	P50, P99 float64
	// BatchRows counts the batches the server decoded while measuring, by
	// rows per batch (from its /metrics, read when measuring starts and
	// after the last answer; keys are the histogram's upper bounds: a batch
	// of 3 rows counts under 4).
	BatchRows map[float64]uint64
	// ClientCPU is the CPU time this process used while measuring, in
	// cores (CPU seconds per second): the clients', and the server's too
	// when it runs in this process.
	ClientCPU float64
	// ServerCPU is the server process's CPU time while measuring, in
	// cores, from its /metrics (process_cpu_seconds_total, read with the
	// batch sizes); 0 when it does not export it.
	ServerCPU float64
}

// RunLoad runs one load test. It fails when the server cannot be reached
// or answers its first request with an error; later failures are counted.
func RunLoad(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	if cfg.Clients < 1 || cfg.Duration <= 0 || len(cfg.Sentences) == 0 {
		return nil, fmt.Errorf("serve: load test needs at least 1 client, a positive duration and a sentence (got %d, %s, %d)", cfg.Clients, cfg.Duration, len(cfg.Sentences))
	}
	// Every client keeps its connection (keep-alive) and its buffers; the
	// bodies are encoded once. /metrics is read with net/http.
	client := &http.Client{}
	defer client.CloseIdleConnections()
	lcs, err := newLoadClients(cfg.URL, PathTranslate, cfg.Clients)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, lc := range lcs {
			lc.release()
		}
	}()
	bodies := make([][]byte, len(cfg.Sentences))
	for i, s := range cfg.Sentences {
		var err error
		if bodies[i], err = json.Marshal(Request{Model: cfg.Model, Inputs: []string{s}}); err != nil {
			return nil, err
		}
	}
	if _, err := lcs[0].send(ctx, bodies[0]); err != nil {
		return nil, fmt.Errorf("serve: load test: first request: %w", err)
	}

	type sample struct {
		latency time.Duration
		tokens  int
	}
	var mu sync.Mutex
	var samples []sample
	res := &LoadResult{Clients: cfg.Clients}
	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	var lastDone time.Time
	// The server's metrics and this process's CPU time are read when
	// measuring starts and after the run.
	var before serverStats
	var beforeErr error
	var cpuBefore time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-time.After(time.Until(measureFrom)):
		case <-ctx.Done():
			return
		}
		cpuBefore = processCPU()
		before, beforeErr = scrapeServer(ctx, client, cfg.URL)
	}()
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			lc := lcs[c]
			k := c * len(cfg.Sentences) / cfg.Clients
			for ctx.Err() == nil {
				sent := time.Now()
				if !sent.Before(end) {
					return
				}
				tokens, err := lc.send(ctx, bodies[k%len(bodies)])
				k++
				done := time.Now()
				if sent.Before(measureFrom) {
					continue
				}
				mu.Lock()
				if err != nil {
					res.Failed++
					if res.FirstError == "" {
						res.FirstError = err.Error()
					}
				} else {
					samples = append(samples, sample{done.Sub(sent), tokens})
				}
				if done.After(lastDone) {
					lastDone = done
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cpuAfter := processCPU()
	after, err := scrapeServer(ctx, client, cfg.URL)
	if err = errors.Join(beforeErr, err); err != nil {
		return nil, err
	}
	res.BatchRows = map[float64]uint64{}
	for le, n := range after.batchRows {
		if d := n - before.batchRows[le]; d > 0 {
			res.BatchRows[le] = d
		}
	}
	res.Requests = len(samples)
	res.Seconds = lastDone.Sub(measureFrom).Seconds()
	if res.Requests == 0 || res.Seconds <= 0 {
		return res, nil
	}
	// CPU is read a little after the last answer; over the whole span.
	span := time.Since(measureFrom).Seconds()
	res.ClientCPU = (cpuAfter - cpuBefore).Seconds() / span
	res.ServerCPU = (after.cpuSeconds - before.cpuSeconds) / span
	lat := make([]float64, len(samples))
	tokens := 0
	for i, s := range samples {
		lat[i] = float64(s.latency) / float64(time.Millisecond)
		tokens += s.tokens
	}
	slices.Sort(lat)
	res.SentencesPerSec = float64(res.Requests) / res.Seconds
	res.TokensPerSec = float64(tokens) / res.Seconds
	res.P50, res.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return res, nil
}

// percentile returns the q-quantile of sorted values (nearest rank).
func percentile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// loadClient sends one-sentence requests, one at a time, over one
// keep-alive connection, reusing its request and response. It is a
// fasthttp client rather than net/http's: the load generator shares the
// machine's cores with the server it measures, and fasthttp spends a
// fraction of net/http's CPU time per request, which leaves more of the
// machine to the server (the figures are in the README's serving section).
type loadClient struct {
	http *fasthttp.HostClient
	url  string
	req  *fasthttp.Request
	resp *fasthttp.Response
}

// newLoadClients returns the clients of one run, sharing one pool of at
// most n connections to the server at base (http://HOST:PORT or
// https://HOST:PORT).
func newLoadClients(base, path string, n int) ([]*loadClient, error) {
	u, err := neturl.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("serve: load test URL %q: want http://HOST:PORT", base)
	}
	hc := &fasthttp.HostClient{Addr: u.Host, IsTLS: u.Scheme == "https", MaxConns: n, NoDefaultUserAgentHeader: true}
	url := strings.TrimSuffix(base, "/") + path
	cs := make([]*loadClient, n)
	for i := range cs {
		cs[i] = &loadClient{http: hc, url: url, req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse()}
	}
	return cs, nil
}

// loadRequestTimeout bounds one request of a load test: a server that
// stops answering fails the run instead of hanging it.
const loadRequestTimeout = time.Minute

// release returns the client's request and response to fasthttp's pools.
func (c *loadClient) release() {
	fasthttp.ReleaseRequest(c.req)
	fasthttp.ReleaseResponse(c.resp)
}

// send posts one request body and returns the output tokens of the
// answer.
func (c *loadClient) send(ctx context.Context, body []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.req.Reset()
	c.req.SetRequestURI(c.url)
	c.req.Header.SetMethod(fasthttp.MethodPost)
	c.req.Header.SetContentType("application/json")
	c.req.SetBodyRaw(body)
	c.resp.Reset()
	timeout := loadRequestTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if err := c.http.DoTimeout(c.req, c.resp, timeout); err != nil {
		return 0, fmt.Errorf("POST %s: %w", c.url, err)
	}
	data := c.resp.Body()
	if code := c.resp.StatusCode(); code != http.StatusOK {
		return 0, fmt.Errorf("%d %s: %s", code, http.StatusText(code), strings.TrimSpace(string(data)))
	}
	return countTokens(data)
}

// countTokens returns the number of output tokens of a one-result answer
// without decoding the rest (mostly attention weights): the elements of
// the result's "tokens" array, the first after the result's start (a beam
// search's result lists its hypotheses after it, each with tokens of its
// own). Neither key can occur inside a JSON string, where its quotes
// would be escaped.
func countTokens(answer []byte) (int, error) {
	start, key := []byte(`{"input":`), []byte(`"tokens":[`)
	i := bytes.Index(answer, start)
	j := -1
	if i >= 0 && !bytes.Contains(answer[i+len(start):], start) {
		j = bytes.Index(answer[i:], key)
	}
	if j < 0 {
		return 0, fmt.Errorf("answer %.200q: want one result with tokens", answer)
	}
	list := answer[i+j+len(key):]
	end := bytes.IndexByte(list, ']')
	switch {
	case end < 0:
		return 0, fmt.Errorf("answer %.200q: the tokens array does not end", answer)
	case end == 0:
		return 0, nil
	}
	return bytes.Count(list[:end], []byte(",")) + 1, nil
}

// serverStats is what the load test reads from a server's /metrics.
type serverStats struct {
	batchRows  map[float64]uint64 // batches by upper bound of rows
	cpuSeconds float64            // process_cpu_seconds_total
}

// scrapeServer reads a server's /metrics: the batch-size histogram summed
// over its models (batches by upper bound of rows, not cumulative) and its
// process CPU time.
func scrapeServer(ctx context.Context, client *http.Client, url string) (serverStats, error) {
	var st serverStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+PathMetrics, nil)
	if err != nil {
		return st, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return st, fmt.Errorf("serve: reading %s: %w", PathMetrics, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return st, fmt.Errorf("serve: parsing %s: %w", PathMetrics, err)
	}
	st.batchRows = map[float64]uint64{}
	if f := fams[MetricBatchRows]; f != nil {
		for _, m := range f.Metric {
			prev := uint64(0)
			for _, b := range m.GetHistogram().GetBucket() {
				st.batchRows[b.GetUpperBound()] += b.GetCumulativeCount() - prev
				prev = b.GetCumulativeCount()
			}
			st.batchRows[math.Inf(1)] += m.GetHistogram().GetSampleCount() - prev
		}
	}
	if f := fams["process_cpu_seconds_total"]; f != nil && len(f.Metric) > 0 {
		st.cpuSeconds = f.Metric[0].GetCounter().GetValue()
	}
	return st, nil
}
