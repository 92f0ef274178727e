package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
}

// RunLoad runs one load test. It fails when the server cannot be reached
// or answers its first request with an error; later failures are counted.
func RunLoad(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	if cfg.Clients < 1 || cfg.Duration <= 0 || len(cfg.Sentences) == 0 {
		return nil, fmt.Errorf("serve: load test needs at least 1 client, a positive duration and a sentence (got %d, %s, %d)", cfg.Clients, cfg.Duration, len(cfg.Sentences))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients, MaxIdleConns: cfg.Clients}}
	defer client.CloseIdleConnections()
	lc := loadClient{http: client, url: strings.TrimSuffix(cfg.URL, "/") + PathTranslate, model: cfg.Model}
	if _, err := lc.send(ctx, cfg.Sentences[0]); err != nil {
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
	// The batch sizes are read when measuring starts and after the run.
	var before map[float64]uint64
	var beforeErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-time.After(time.Until(measureFrom)):
		case <-ctx.Done():
			return
		}
		before, beforeErr = ScrapeBatchRows(ctx, client, cfg.URL)
	}()
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			k := c * len(cfg.Sentences) / cfg.Clients
			for ctx.Err() == nil {
				sent := time.Now()
				if !sent.Before(end) {
					return
				}
				tokens, err := lc.send(ctx, cfg.Sentences[k%len(cfg.Sentences)])
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
	after, err := ScrapeBatchRows(ctx, client, cfg.URL)
	if err = errors.Join(beforeErr, err); err != nil {
		return nil, err
	}
	res.BatchRows = map[float64]uint64{}
	for le, n := range after {
		if d := n - before[le]; d > 0 {
			res.BatchRows[le] = d
		}
	}
	res.Requests = len(samples)
	res.Seconds = lastDone.Sub(measureFrom).Seconds()
	if res.Requests == 0 || res.Seconds <= 0 {
		return res, nil
	}
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

// loadClient sends one-sentence requests.
type loadClient struct {
	http  *http.Client
	url   string
	model string
}

// send translates one sentence and returns the output tokens of the
// answer.
func (c loadClient) send(ctx context.Context, sentence string) (int, error) {
	body, err := json.Marshal(Request{Model: c.model, Inputs: []string{sentence}})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	var ans struct {
		Results []struct {
			Tokens []int64 `json:"tokens"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &ans); err != nil || len(ans.Results) != 1 {
		return 0, fmt.Errorf("answer %.200q: want one result (%v)", data, err)
	}
	return len(ans.Results[0].Tokens), nil
}

// ScrapeBatchRows reads the batch-size histogram of a server's /metrics,
// summed over its models: the number of batches by upper bound of rows,
// not cumulative.
func ScrapeBatchRows(ctx context.Context, client *http.Client, url string) (map[float64]uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+PathMetrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("serve: reading %s: %w", PathMetrics, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("serve: parsing %s: %w", PathMetrics, err)
	}
	out := map[float64]uint64{}
	if f := fams[MetricBatchRows]; f != nil {
		for _, m := range f.Metric {
			prev := uint64(0)
			for _, b := range m.GetHistogram().GetBucket() {
				out[b.GetUpperBound()] += b.GetCumulativeCount() - prev
				prev = b.GetCumulativeCount()
			}
			out[math.Inf(1)] += m.GetHistogram().GetSampleCount() - prev
		}
	}
	return out, nil
}
