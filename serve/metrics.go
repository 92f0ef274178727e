package serve

import (
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/idlemem"
	"github.com/attnx/attnx/subword"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metric names, all under the attnx_serve_ prefix.
const (
	MetricRequests   = "attnx_serve_requests_total"
	MetricLatency    = "attnx_serve_request_duration_seconds"
	MetricBatchRows  = "attnx_serve_batch_rows"
	MetricTokens     = "attnx_serve_tokens_decoded_total"
	MetricInputs     = "attnx_serve_inputs_translated_total"
	MetricQueueDepth = "attnx_serve_queue_depth"
	MetricInFlight   = "attnx_serve_requests_in_flight"
	// MetricRowsInFlight is the inputs (sentences) of the translation
	// requests admitted and not yet answered, waiting or decoding: the
	// load deploy/hpa.yaml scales on.
	MetricRowsInFlight = "attnx_serve_rows_in_flight"
	MetricRowsJoined   = "attnx_serve_rows_joined_total"
	// MetricRowsRemoved counts rows that left the batch unfinished.
	MetricRowsRemoved = "attnx_serve_rows_removed_total"
	// MetricBindingLookups counts the decoder batch's runs by whether
	// their IoBinding was cached (result="hit") or made ("miss"): the
	// binding cache's hit rate (batching on).
	MetricBindingLookups = "attnx_serve_binding_lookups_total"
	// MetricTokenizerCacheEntries is the words the source tokenizer's
	// cache holds now.
	MetricTokenizerCacheEntries = "attnx_serve_tokenizer_cache_entries"
	// MetricTokenizerCacheBytes is the bytes that cache holds now
	// (bounded by subword.WordCacheBytes).
	MetricTokenizerCacheBytes = "attnx_serve_tokenizer_cache_bytes"
	// MetricIdleBufferBytes is the bytes the process holds in idle
	// buffers (package idlemem).
	MetricIdleBufferBytes = "attnx_serve_idle_buffer_bytes"
	// MetricIdleBufferDropped counts the bytes of idle buffers dropped.
	MetricIdleBufferDropped = "attnx_serve_idle_buffer_dropped_bytes_total"
	// MetricTokenizerCacheLookups counts the words the source tokenizer
	// found in its cache (result="hit") or segmented ("miss").
	MetricTokenizerCacheLookups = "attnx_serve_tokenizer_cache_lookups_total"
)

// metrics are a Server's Prometheus collectors, on a registry of its own
// (with the Go and process collectors).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	batch    *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
	inputs   *prometheus.CounterVec
	inFlight prometheus.Gauge
	// rowsInFlight: see MetricRowsInFlight.
	rowsInFlight prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests,
			Help: "Translation requests answered, by model and HTTP status (499: the client went away), and requests of any path refused before routing (403 for a Host not allowed, 415 for a body that is not JSON, 500 for a bug). Model is empty when the request named no served model or was refused before routing.",
		}, []string{"model", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricLatency,
			Help:    "Time from a translation request's arrival to its answer, for requests answered 200.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms .. 33 s
		}, []string{"model"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricBatchRows,
			Help:    "Rows decoded together: per decoder step with batching on (decoder slots), per Translator call with batching off.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}, []string{"model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricTokens,
			Help: "Output tokens decoded (EOS included) in answered requests.",
		}, []string{"model"}),
		inputs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricInputs,
			Help: "Inputs (sentences) translated in answered requests.",
		}, []string{"model"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricInFlight,
			Help: "Translation requests being handled (waiting or decoding).",
		}),
	}
	m.rowsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: MetricRowsInFlight,
		Help: "Inputs (sentences) of the translation requests admitted and not yet answered, waiting for their turn or decoding, all models together: the load per replica that an autoscaler scales on.",
	})
	m.reg.MustRegister(m.requests, m.latency, m.batch, m.tokens, m.inputs, m.inFlight, m.rowsInFlight,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: MetricIdleBufferBytes,
			Help: "Bytes the process holds in idle buffers for the next calls (evaluator arenas, decoding executors): bounded by --max-idle-memory, counted in --max-memory, dropped after --idle-release without requests.",
		}, func() float64 { return float64(idlemem.Bytes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: MetricIdleBufferDropped,
			Help: "Bytes of idle buffers dropped, after the idle time or to make room in the memory budget.",
		}, func() float64 { return float64(idlemem.Dropped()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// addModel registers the gauges and counters of one model read from its
// limiter and backend: the queue depth and, with batching on, the
// scheduler's counters.
func (m *metrics) addModel(model string, read func() (depth int, st decode.SchedulerStats)) {
	labels := prometheus.Labels{"model": model}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        MetricQueueDepth,
			Help:        "Translation requests waiting for their turn to decode (with batching on: for their rows to join the batch).",
			ConstLabels: labels,
		}, func() float64 { d, _ := read(); return float64(d) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        MetricRowsJoined,
			Help:        "Rows (inputs) that joined the running decoder batch (batching on).",
			ConstLabels: labels,
		}, func() float64 { _, st := read(); return float64(st.Joined) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        MetricRowsRemoved,
			Help:        "Rows taken out of the running decoder batch unfinished, because their request was cancelled or timed out (batching on).",
			ConstLabels: labels,
		}, func() float64 { _, st := read(); return float64(st.Removed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        MetricBindingLookups,
			Help:        "Runs of the decoder batch (batching on) whose IoBinding, one per batch shape, was cached (result=hit) or had to be made (result=miss).",
			ConstLabels: prometheus.Labels{"model": model, "result": "hit"},
		}, func() float64 { _, st := read(); return float64(st.BindingHits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        MetricBindingLookups,
			Help:        "Runs of the decoder batch (batching on) whose IoBinding, one per batch shape, was cached (result=hit) or had to be made (result=miss).",
			ConstLabels: prometheus.Labels{"model": model, "result": "miss"},
		}, func() float64 { _, st := read(); return float64(st.BindingMisses) }),
	)
}

// addTokenizerCache registers one model's tokenizer cache counts, read
// from its backend.
func (m *metrics) addTokenizerCache(model string, read func() subword.CacheStats) {
	const lookups = "Words of the inputs that the source tokenizer found segmented in its bounded cache (result=hit) or had to segment (result=miss)."
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        MetricTokenizerCacheEntries,
			Help:        "Words whose segmentation the source tokenizer's cache holds (bounded, least recently used out).",
			ConstLabels: prometheus.Labels{"model": model},
		}, func() float64 { return float64(read().Entries) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        MetricTokenizerCacheBytes,
			Help:        "Bytes the source tokenizer's cache of segmented words holds (words, pieces and bookkeeping; bounded, least recently used out).",
			ConstLabels: prometheus.Labels{"model": model},
		}, func() float64 { return float64(read().Bytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: MetricTokenizerCacheLookups, Help: lookups,
			ConstLabels: prometheus.Labels{"model": model, "result": "hit"},
		}, func() float64 { return float64(read().Hits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: MetricTokenizerCacheLookups, Help: lookups,
			ConstLabels: prometheus.Labels{"model": model, "result": "miss"},
		}, func() float64 { return float64(read().Misses) }),
	)
}
