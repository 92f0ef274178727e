package serve

import (
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// findMetric returns the metric of family name whose labels include want.
func findMetric(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// gathered returns the metric of s's registry named name whose labels
// include labels, or nil.
func gathered(t *testing.T, s *Server, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	list, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, f := range list {
		fams[f.GetName()] = f
	}
	return findMetric(fams, name, labels)
}

// counterValue reads a counter of s's registry; 0 when absent.
func counterValue(t *testing.T, s *Server, name string, labels map[string]string) float64 {
	t.Helper()
	return gathered(t, s, name, labels).GetCounter().GetValue()
}

// scrape fetches /metrics and parses the text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, url+PathMetrics)
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams
}

// TestMetricsAfterRequests sends good and bad requests to the demo model
// and reads every metric back from GET /metrics.
func TestMetricsAfterRequests(t *testing.T) {
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demoModel(t)}}})
	inputs := demoInputs(t)[:7]
	tokens := 0
	for _, batch := range [][]string{inputs[:1], inputs[1:3], inputs[3:7]} {
		body := `{"inputs": ["` + strings.Join(batch, `", "`) + `"]}`
		code, ans := post(t, hs.URL+PathTranslate, body)
		if code != 200 {
			t.Fatalf("%d %s", code, ans)
		}
		for _, r := range decodeResponse(t, ans).Results {
			tokens += len(r.Tokens)
		}
	}
	for _, bad := range []string{`{}`, `{"inputs": ["ä"]}`} {
		if code, ans := post(t, hs.URL+PathTranslate, bad); code != 400 {
			t.Fatalf("%s: %d %s", bad, code, ans)
		}
	}
	post(t, hs.URL+PathTranslate, `{"model": "nope", "inputs": ["1"]}`)

	fams := scrape(t, hs.URL)
	dates := map[string]string{"model": "dates"}
	checks := []struct {
		name   string
		labels map[string]string
		get    func(*dto.Metric) float64
		want   float64
	}{
		{MetricRequests, map[string]string{"model": "dates", "code": "200"}, counter, 3},
		{MetricRequests, map[string]string{"model": "dates", "code": "400"}, counter, 2},
		{MetricRequests, map[string]string{"model": "", "code": "404"}, counter, 1},
		{MetricTokens, dates, counter, float64(tokens)},
		{MetricInputs, dates, counter, 7},
		{MetricLatency, dates, histCount, 3},
		// One Translator call per answered request, of 1, 2 and 4 rows.
		{MetricBatchRows, dates, histCount, 3},
		{MetricBatchRows, dates, histSum, 7},
		{MetricQueueDepth, dates, gauge, 0},
		{MetricInFlight, nil, gauge, 0},
	}
	for _, c := range checks {
		m := findMetric(fams, c.name, c.labels)
		if m == nil {
			t.Errorf("%s%v missing from /metrics", c.name, c.labels)
			continue
		}
		if got := c.get(m); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Batch sizes 1, 2 and 4 land in the buckets le=1, le=2 and le=4.
	m := findMetric(fams, MetricBatchRows, dates)
	var buckets []string
	for _, b := range m.GetHistogram().GetBucket()[:4] {
		buckets = append(buckets, fmt.Sprintf("le=%v:%d", b.GetUpperBound(), b.GetCumulativeCount()))
	}
	if got := strings.Join(buckets, " "); got != "le=1:1 le=2:2 le=4:3 le=8:3" {
		t.Errorf("batch-size buckets %s", got)
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Error("the Go and process collectors are missing")
	}
}

func counter(m *dto.Metric) float64   { return m.GetCounter().GetValue() }
func gauge(m *dto.Metric) float64     { return m.GetGauge().GetValue() }
func histCount(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) }
func histSum(m *dto.Metric) float64   { return m.GetHistogram().GetSampleSum() }
