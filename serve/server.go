package serve

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/attnx/attnx/internal/idlemem"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/panics"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/subword"
	"github.com/attnx/attnx/translate"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the HTTP translation service over one backend per model. Make
// one with New, then Serve it (or Load it and mount Handler yourself).
type Server struct {
	cfg     Config
	models  map[string]*servedModel
	order   []*servedModel
	ready   atomic.Bool
	closing atomic.Bool
	metrics *metrics
	handler http.Handler
	// readers holds the requests still reading their body, so that a
	// shutdown can cut the stalled ones (cutReaders) instead of waiting
	// for them; cut is set once it has.
	readersMu sync.Mutex
	readers   map[*http.ResponseController]struct{}
	cut       bool
	// budget is the memory the requests in flight may need together.
	budget memoryBudget
	// hosts, when not nil, is the Host names requests may carry: set by
	// Serve on a loopback listener, against DNS rebinding.
	hosts map[string]bool
}

// loopbackHosts returns the Host names a server on the loopback address
// addr answers, with extra names (Config.AllowedHosts), or nil when addr is
// not a loopback address: then every name is served, as behind a load
// balancer or in a cluster.
func loopbackHosts(addr net.Addr, extra []string) map[string]bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return nil
	}
	hosts := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true, tcp.IP.String(): true}
	for _, h := range extra {
		hosts[strings.ToLower(h)] = true
	}
	return hosts
}

// guard refuses what a web page in a browser could make a loopback server
// do for it: a request whose Host is not one of the server's names (a
// DNS-rebinding page reads /metrics and /v1/models as its own origin), and
// a translate POST whose body is not declared JSON (a page may send
// text/plain to any address without asking).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.closing.Load() {
			// Draining: the answer closes its connection, so that a
			// client's next request opens one to a replica still
			// ready, instead of finding this one closed when the
			// server stops.
			w.Header().Set("Connection", "close")
		}
		if s.hosts != nil {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			host = strings.ToLower(strings.Trim(host, "[]"))
			if !s.hosts[host] {
				s.refuse(w, http.StatusForbidden, fmt.Sprintf("Host %q is not a name of this server, which listens on a loopback address: start attnx serve with --allow-host %s to answer it", r.Host, host))
				return
			}
		}
		if r.Method == http.MethodPost {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				s.refuse(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: send the body as JSON with Content-Type: application/json (curl: -H 'Content-Type: application/json')", r.Header.Get("Content-Type")))
				return
			}
		}
		defer func() {
			// A bug that one request meets answers that request 500,
			// naming it, and is logged; the server goes on.
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			err := panics.New(p, "answering %s %s", r.Method, r.URL.Path)
			s.cfg.Logf("%v at %s", err, err.Frame())
			s.refuse(w, http.StatusInternalServerError, err.Error())
		}()
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request that the guard stops before any handler, and
// counts it in the requests metric with an empty model, so that a
// misconfigured client (a wrong Host, a form content type) shows there.
func (s *Server) refuse(w http.ResponseWriter, code int, msg string) {
	s.metrics.requests.WithLabelValues("", strconv.Itoa(code)).Inc()
	writeError(w, code, msg)
}

// readBody reads the request body into req under deadline (the request's
// own), registered as a reader that a shutdown may cut. It returns 0 or
// the status and message of what is wrong with the body.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, req *Request, deadline time.Time) (int, string) {
	return s.readBodyWith(w, r, deadline, func(body io.Reader) (int, string) { return decodeRequest(body, req, s.cfg.MaxBodyBytes, requestFields) })
}

// readBodyWith is readBody for any body: decode reads it (bounded by
// Config.MaxBodyBytes) and returns 0 or the status and message of what is
// wrong with it.
func (s *Server) readBodyWith(w http.ResponseWriter, r *http.Request, deadline time.Time, decode func(io.Reader) (int, string)) (int, string) {
	rc := http.NewResponseController(w)
	s.readersMu.Lock()
	if s.readers == nil {
		s.readers = map[*http.ResponseController]struct{}{}
	}
	s.readers[rc] = struct{}{}
	if s.cut {
		deadline = time.Now()
	}
	s.readersMu.Unlock()
	defer func() {
		s.readersMu.Lock()
		delete(s.readers, rc)
		s.readersMu.Unlock()
	}()
	// A server not behind net/http (a test's recorder) has no deadline
	// to set; the request context still bounds it.
	_ = rc.SetReadDeadline(deadline)
	code, msg := decode(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if code == http.StatusRequestTimeout {
		s.readersMu.Lock()
		cut := s.cut
		s.readersMu.Unlock()
		if cut {
			return http.StatusServiceUnavailable, "shutting down: the request body had not arrived; send it again to another replica"
		}
		return code, fmt.Sprintf("the request body did not arrive within the request timeout of %s (--request-timeout)", s.cfg.RequestTimeout)
	}
	_ = rc.SetReadDeadline(time.Time{})
	return code, msg
}

// cutReaders ends, at once, the body reads of the requests still reading
// theirs, and of any that start reading from now on: a client that sent
// its headers and stalled must not hold a shutdown.
func (s *Server) cutReaders() {
	s.readersMu.Lock()
	defer s.readersMu.Unlock()
	s.cut = true
	for rc := range s.readers {
		_ = rc.SetReadDeadline(time.Now())
	}
}

// servedModel is one served model.
type servedModel struct {
	name, dir string
	lim       *limiter
	loaded    atomic.Bool // backend and info are set
	backend   Backend
	info      ModelInfo
	// defaults is how a request that sets nothing is decoded: the model's
	// attnx.json defaults under the server's decoding flags.
	defaults Job
	// srcTokenizer is the kind of the model's source subword tokenizer
	// ("": none), and batchLimits says its output limits follow its
	// toolkit's batches: read from attnx.json once, at load. srcSpec is
	// that tokenizer, whose words --max-word-chars counts.
	srcTokenizer string
	srcSpec      subword.Spec
	batchLimits  bool
}

// queue returns the requests waiting for their turn (the limiter's, or
// with batching on the scheduler's) and the scheduler's counters.
func (m *servedModel) queue() (int, decode.SchedulerStats) {
	d := m.lim.depth()
	var st decode.SchedulerStats
	if m.loaded.Load() {
		if sb, ok := m.backend.(SchedulingBackend); ok {
			st = sb.Stats()
			d += st.Queued
		}
	}
	return d, st
}

// Saturated returns the first model whose queue is full (Config.MaxQueue
// requests waiting: the next one would be refused with 429) and its
// depth; "" when none is. Readiness fails while one is, so that a load
// balancer sends new requests to other replicas until the queue drains.
func (s *Server) Saturated() (model string, depth int) {
	for _, m := range s.order {
		if d, _ := m.queue(); d >= s.cfg.MaxQueue {
			return m.name, d
		}
	}
	return "", 0
}

// New checks cfg and returns a Server whose models are not loaded yet.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, models: map[string]*servedModel{}, metrics: newMetrics()}
	s.budget.max = cfg.MaxMemory
	idlemem.SetLimit(cfg.MaxIdleMemory)
	idlemem.SetTimeout(cfg.IdleRelease)
	for _, md := range cfg.Models {
		m := &servedModel{name: md.Name, dir: md.Dir, lim: newLimiter(cfg.MaxConcurrent, cfg.MaxQueue)}
		s.models[m.name] = m
		s.order = append(s.order, m)
		s.metrics.addModel(m.name, m.queue)
		s.metrics.addTokenizerCache(m.name, func() subword.CacheStats {
			if c, ok := m.backend.(interface{ TokenizerCache() subword.CacheStats }); ok && m.loaded.Load() {
				return c.TokenizerCache()
			}
			return subword.CacheStats{}
		})
	}
	s.handler = s.guard(s.routes())
	return s, nil
}

// Handler returns the service's routes. Translation requests get 503 until
// Load has succeeded.
func (s *Server) Handler() http.Handler { return s.handler }

// Ready reports whether every model is loaded and shutdown has not begun.
func (s *Server) Ready() bool { return s.ready.Load() && !s.closing.Load() }

// Load opens every model's backend; on the first failure it closes those
// already open and returns the error.
func (s *Server) Load() error {
	for i, m := range s.order {
		if s.closing.Load() {
			// Serve is stopping (its listener failed): open no more.
			return nil
		}
		start := time.Now()
		obs := s.metrics.batch.WithLabelValues(m.name)
		var b Backend
		err := panics.Call(func() (err error) {
			b, err = s.cfg.Open(m.dir, &s.cfg, func(rows int) { obs.Observe(float64(rows)) })
			return err
		}, "loading model %q from %s", m.name, m.dir)
		if err != nil {
			for _, o := range s.order[:i] {
				o.loaded.Store(false)
				o.backend.Close()
			}
			return fmt.Errorf("model %q (%s): %w", m.name, m.dir, err)
		}
		info := b.Info()
		m.defaults = s.cfg.Decoding.job(info.Defaults)
		m.srcTokenizer, m.batchLimits = "", info.Defaults != nil && info.Defaults.Batching != nil
		if info.SrcTokenizer != nil {
			m.srcTokenizer, m.srcSpec = info.SrcTokenizer.Kind, *info.SrcTokenizer
		}
		if err := checkDefaults(m.defaults, s.cfg.MaxBeam, s.cfg.MaxOutLen, fmt.Sprintf("model %q: the defaults of %s under the decoding flags", m.name, filepath.Join(m.dir, modeldir.InfoFile))); err != nil {
			b.Close()
			for _, o := range s.order[:i] {
				o.loaded.Store(false)
				o.backend.Close()
			}
			return err
		}
		_, scheduling := b.(SchedulingBackend)
		maxBeam, _ := s.maxBeam()
		m.backend = b
		m.info = ModelInfo{Batching: scheduling,
			Name: m.name, Default: i == 0, Config: info.Config, Special: info.Special,
			SrcTokens: info.SrcTokens, TgtTokens: info.TgtTokens,
			MaxInputs: s.cfg.MaxInputs, MaxSourceLen: s.cfg.MaxSourceLen, MaxOutLen: s.cfg.MaxOutLen, MaxBeam: maxBeam,
			MaxRequestMemory: s.cfg.MaxRequestMemory, DefaultBeam: max(m.defaults.Beam, 1), DefaultRules: cmp.Or(m.defaults.Rules, translate.RulesSpec),
		}
		m.loaded.Store(true)
		s.cfg.Logf("model %q loaded from %s in %s", m.name, m.dir, time.Since(start).Round(time.Millisecond))
	}
	if err := s.checkOnmt(); err != nil {
		for _, o := range s.order {
			o.loaded.Store(false)
			o.backend.Close()
		}
		return err
	}
	s.ready.Store(true)
	return nil
}

// Close fails readiness and closes every loaded backend, waiting for their
// calls in progress.
func (s *Server) Close() error {
	s.closing.Store(true)
	var errs []error
	for _, m := range s.order {
		if m.loaded.Load() {
			errs = append(errs, m.backend.Close())
		}
	}
	return errors.Join(errs...)
}

// Serve answers HTTP on ln until ctx is done. It loads the models after it
// starts listening, so that liveness answers while they load. When ctx is
// done it shuts down gracefully: readiness fails at once, the listener
// stays open for DrainDelay, then closes; requests in flight get up to
// ShutdownTimeout to finish, and the models are closed. Serve returns nil
// after a clean shutdown, or the error that stopped it (a model that would
// not load, requests still running at the timeout).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Every phase of a connection is bounded: the headers; the body,
	// read under the request's own deadline (readBody), ReadTimeout being
	// the backstop; the answer, written within WriteTimeout of the
	// headers, past the longest a request may decode; an idle keep-alive
	// connection.
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:  readHeaderTimeout + s.cfg.RequestTimeout,
		WriteTimeout: readHeaderTimeout + s.cfg.RequestTimeout + writeMargin,
		IdleTimeout:  idleTimeout}
	s.hosts = loopbackHosts(ln.Addr(), s.cfg.AllowedHosts)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	s.cfg.Logf("listening on http://%s", ln.Addr())

	loaded := make(chan error, 1)
	go func() { loaded <- s.Load() }()
	var err error
	select {
	case err = <-loaded:
		if err == nil {
			s.cfg.Logf("ready: %s", strings.Join(s.modelNames(), ", "))
			select {
			case <-ctx.Done():
			case err = <-served:
				served <- err // read again below
			}
		}
	case <-ctx.Done():
		// Shutting down while loading: let Load finish so that its
		// backends are closed below.
		err = <-loaded
	case err = <-served:
		// The listener failed while loading: Load stops before its next
		// model; wait for the one it is opening, so that Close closes it.
		served <- err
		s.closing.Store(true)
		err = errors.Join(err, <-loaded)
	}
	s.closing.Store(true)
	if err == nil && s.cfg.DrainDelay > 0 {
		s.cfg.Logf("shutting down: draining for %s", s.cfg.DrainDelay)
		time.Sleep(s.cfg.DrainDelay)
	}
	s.cfg.Logf("shutting down: finishing requests in flight")
	s.cutReaders()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		hs.Close()
		err = errors.Join(err, fmt.Errorf("requests still in flight after the shutdown timeout of %s: %w", s.cfg.ShutdownTimeout, serr))
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && serr != err {
		err = errors.Join(err, serr)
	}
	err = errors.Join(err, s.Close())
	if err == nil {
		s.cfg.Logf("stopped")
	}
	return err
}

func (s *Server) modelNames() []string {
	names := make([]string, len(s.order))
	for i, m := range s.order {
		names[i] = m.name
	}
	return names
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
	})
	mux.HandleFunc("GET "+PathReady, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.closing.Load():
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
		case !s.ready.Load():
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading models"})
		default:
			if model, depth := s.Saturated(); model != "" {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "saturated", "model": model, "queue_depth": depth})
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		}
	})
	mux.Handle("GET "+PathMetrics, promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+PathModels, s.listModels)
	mux.HandleFunc(PathTranslate, s.translate)
	mux.HandleFunc(PathModelTranslate, s.translate)
	mux.HandleFunc(PathScore, s.score)
	mux.HandleFunc("GET /{$}", serveViewer)
	if s.cfg.Onmt != nil {
		s.onmtRoutes(mux)
	}
	if s.cfg.Profiling {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such page %s: the API is POST %s, GET %s, %s, %s and %s", r.URL.Path, PathTranslate, PathModels, PathHealth, PathReady, PathMetrics))
	})
	return mux
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, "not ready: the models are loading")
		return
	}
	resp := ModelsResponse{Models: []ModelInfo{}}
	for _, m := range s.order {
		resp.Models = append(resp.Models, m.info)
	}
	writeJSON(w, http.StatusOK, resp)
}

// translate handles POST /v1/translate and /v1/models/NAME/translate.
func (s *Server) translate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.metrics.inFlight.Inc()
	defer s.metrics.inFlight.Dec()
	m, code, resp, release := s.handleTranslate(w, r)
	// The request's memory stays reserved until its answer is written.
	defer release()
	name := ""
	if m != nil {
		name = m.name
	}
	s.metrics.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
	if code == statusClientGone {
		return
	}
	if code == http.StatusOK {
		s.metrics.latency.WithLabelValues(name).Observe(time.Since(start).Seconds())
	}
	if out, ok := resp.(*Response); ok {
		writeResponse(w, out)
		return
	}
	writeJSON(w, code, resp)
}

// statusClientGone is recorded for requests whose client went away (as
// nginx does); nothing is written.
const statusClientGone = 499

// handleTranslate returns the model (nil when none was resolved), the
// status and the body to answer.
func (s *Server) handleTranslate(w http.ResponseWriter, r *http.Request) (_ *servedModel, _ int, _ any, release func()) {
	release = func() {}
	fail := func(m *servedModel, code int, format string, args ...any) (*servedModel, int, any, func()) {
		return m, code, ErrorResponse{Error: fmt.Sprintf(format, args...)}, release
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return fail(nil, http.StatusMethodNotAllowed, "%s %s: use POST with a JSON body such as {\"inputs\": [\"text\"]}", r.Method, r.URL.Path)
	}
	// Requests that reach a handler while shutting down are still
	// served: the listener is closing (or draining), and the backends stay
	// open until every handler has returned.
	if !s.ready.Load() {
		return fail(nil, http.StatusServiceUnavailable, "not ready: the models are loading")
	}
	// The request's deadline starts now and covers reading the body: a
	// client that sends its headers and stalls is answered 408 then.
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var req Request
	if code, msg := s.readBody(w, r, &req, deadline); code != 0 {
		return fail(nil, code, "%s", msg)
	}
	return s.translateRequest(ctx, w, r, &req, r.PathValue("name"))
}

// translateRequest answers req, read from r's body or made from another
// API's request (onmt_server's), for the model named by the path
// (fromPath, may be empty) or req: the one translation path of every route.
func (s *Server) translateRequest(ctx context.Context, w http.ResponseWriter, r *http.Request, req *Request, fromPath string) (_ *servedModel, _ int, _ any, release func()) {
	release = func() {}
	fail := func(m *servedModel, code int, format string, args ...any) (*servedModel, int, any, func()) {
		return m, code, ErrorResponse{Error: fmt.Sprintf(format, args...)}, release
	}
	m, code, msg := s.resolveModel(fromPath, req.Model)
	if code != 0 {
		return fail(nil, code, "%s", msg)
	}
	job, msg := s.checkRequest(req, m)
	if msg != "" {
		return fail(m, http.StatusBadRequest, "%s", msg)
	}
	// A request's inputs are decoded as `attnx translate --src` decodes
	// the same lines: where the toolkit's limits follow its batches, the
	// request is the test set.
	job.AsTestSet = job.MaxLen == 0 && m.batchLimits
	texts, n := req.Inputs, len(req.Inputs)+len(req.IDs)
	if job.ReplaceUnk && !m.info.canReplaceUnk() {
		return fail(m, http.StatusBadRequest, "replace_unk: model %q has no unknown token in both its source and target vocabularies", m.name)
	}
	if texts != nil && m.info.SrcTokens == nil {
		return fail(m, http.StatusBadRequest, `inputs: the model has no source vocabulary: send token ids ("ids": [[5, 9, 2]])`)
	}
	// Tokenizers run on bounded text only: a line's bytes are capped
	// first (the body's are, by MaxBodyBytes).
	// A subword tokenizer's work grows with the length of a word (BPE's
	// merges by n log n): one longer than any real word is refused before
	// it runs.
	for i, text := range texts {
		if len(text) > s.cfg.MaxInputBytes {
			return fail(m, http.StatusRequestEntityTooLarge, "inputs[%d]: %d bytes: more than the limit of %d bytes per input (--max-input-bytes); split it",
				i, len(text), s.cfg.MaxInputBytes)
		}
		if m.srcTokenizer == "" || (req.Pretokenized != nil && *req.Pretokenized) {
			continue
		}
		// Words as the tokenizer splits them: a tab joins two words
		// for some (subword.Spec.LongestWord).
		if n := m.srcSpec.LongestWord(text); n > s.cfg.MaxWordChars {
			return fail(m, http.StatusRequestEntityTooLarge, "inputs[%d]: a word of %d characters: more than the limit of %d characters per word (--max-word-chars) that the model's %s tokenizer segments",
				i, n, s.cfg.MaxWordChars, m.srcTokenizer)
		}
	}
	field := "ids"
	var err error
	pretok := req.Pretokenized != nil && *req.Pretokenized
	var notes []string
	if texts != nil && !pretok {
		if seg, ok := m.backend.(interface{ LooksSegmented(string) string }); ok {
			for _, text := range texts {
				if n := seg.LooksSegmented(text); n != "" {
					notes = append(notes, n)
					break
				}
			}
		}
	}
	if texts != nil {
		// Tokenised once, here: the memory estimate, the source length
		// limit and the default output length count the pieces, and the
		// backend decodes these rows.
		field = "inputs"
		err = panics.Call(func() (err error) {
			// A copy model's words outside the vocabulary are this
			// request's own (translate.Sources), for its rows alone.
			var src translate.Sources
			src, err = m.backend.Tokenize(ctx, texts, pretok)
			job.IDs, job.Words = src.Rows, src.Words
			return err
		}, "tokenizing a request of %d inputs for model %q", n, m.name)
		if err != nil {
			return s.translateError(w, r, m, field, err, release)
		}
	}
	if msg := prefixJob(req, m, &job); msg != "" {
		return fail(m, http.StatusBadRequest, "%s", msg)
	}
	// Each row's output limits, as its search will get them: what the
	// memory estimate counts, held to --max-out-len.
	limits, err := s.outputLimits(m, job)
	var le *limitError
	switch {
	case errors.As(err, &le):
		return fail(m, http.StatusBadRequest, "%s", le.describe(field))
	case errors.As(err, new(*translate.InputError)):
		return s.translateError(w, r, m, field, err, release)
	case err != nil:
		return fail(m, http.StatusBadRequest, "%s", translate.OptionNames(err.Error(), func(o translate.DecodingOption) string { return o.Field }))
	}
	need := requestMemory(m.info.Config.WithDefaults(), job, limits)
	if need > s.cfg.MaxRequestMemory {
		return fail(m, http.StatusRequestEntityTooLarge, "the request needs about %s (%d inputs, beam %d, outputs of up to %d tokens, attention %v): more than the per-request memory budget of %s (--max-request-memory); send fewer inputs or shorter sources, or ask for a smaller beam or max_len, or no attention",
			mib(need), n, max(job.Beam, 1), longestLimit(limits), job.Attention, mib(s.cfg.MaxRequestMemory))
	}
	if !s.budget.reserve(need) {
		w.Header().Set("Retry-After", "1")
		return fail(m, http.StatusTooManyRequests, "the server's memory budget of %s (--max-memory) is taken by the requests in flight, and this one needs about %s: retry later",
			mib(s.cfg.MaxMemory), mib(need))
	}
	release = func() { s.budget.release(need) }

	// The rows of admitted requests, waiting or decoding: the load an
	// autoscaler scales on (deploy/hpa.yaml).
	s.metrics.rowsInFlight.Add(float64(n))
	defer s.metrics.rowsInFlight.Sub(float64(n))
	var res []translate.Result
	decode := func() (err error) {
		res, err = m.backend.Translate(ctx, job)
		return err
	}
	const what = "decoding a request of %d inputs for model %q"
	if m.info.Batching {
		// The scheduler admits requests itself.
		err = panics.Call(decode, what, n, m.name)
	} else {
		var release func()
		if release, err = m.lim.acquire(ctx); err == nil {
			err = panics.Call(decode, what, n, m.name)
			release()
		}
	}
	if !job.Attention {
		// Backends that compute it anyway (the loop engine's graphs): not
		// asked for, not answered.
		for i := range res {
			res[i].Attention = nil
		}
	}
	if !job.Attention && !job.Alignment {
		for i := range res {
			res[i].Alignment = nil
			for h := range res[i].Hypotheses {
				res[i].Hypotheses[h].Alignment = nil
			}
		}
	}
	if err != nil {
		return s.translateError(w, r, m, field, err, release)
	}
	if len(res) != n {
		s.cfg.Logf("model %q: backend returned %d results for %d inputs", m.name, len(res), n)
		return fail(m, http.StatusInternalServerError, "decoding failed: %d results for %d inputs", len(res), n)
	}
	out := Response{Model: m.name, Results: make([]translate.ResultJSON, len(res)), Notes: notes}
	tokens := 0
	for i, rr := range res {
		input := ""
		if texts != nil {
			input = texts[i]
		} else {
			input = joinIDs(job.IDs[i])
		}
		out.Results[i] = rr.JSON(input)
		tokens += len(rr.Tokens)
	}
	s.metrics.tokens.WithLabelValues(m.name).Add(float64(tokens))
	s.metrics.inputs.WithLabelValues(m.name).Add(float64(len(res)))
	return m, http.StatusOK, &out, release
}

// translateError answers a request whose inputs could not be tokenised or
// decoded (err, not nil); field names the request's inputs.
func (s *Server) translateError(w http.ResponseWriter, r *http.Request, m *servedModel, field string, err error, release func()) (*servedModel, int, any, func()) {
	fail := func(code int, format string, args ...any) (*servedModel, int, any, func()) {
		return m, code, ErrorResponse{Error: fmt.Sprintf(format, args...)}, release
	}
	var ie *translate.InputError
	var mem *translate.MemoryLimitError
	switch {
	case errors.As(err, &mem):
		return fail(http.StatusRequestEntityTooLarge, "%s", mem.Remedy("send fewer inputs, shorter sources or a smaller beam"))
	case errors.As(err, &ie):
		return fail(http.StatusBadRequest, "%s[%d]: %s", field, ie.Row, ie.Describe(
			func(h translate.UNKHint) string {
				return fmt.Sprintf("start attnx serve with --unk to map unknown %ss to %s (id %d)", h.What, h.Token, h.ID)
			},
			func(n int) string { return fmt.Sprintf("the server's limit --max-src-len %d", n) }))
	case errors.Is(err, ErrQueueFull):
		w.Header().Set("Retry-After", "1")
		return fail(http.StatusTooManyRequests, "model %q is busy (%v): retry later", m.name, strings.TrimPrefix(err.Error(), "serve: "))
	case r.Context().Err() != nil:
		return m, statusClientGone, nil, release
	case errors.Is(err, context.DeadlineExceeded):
		return fail(http.StatusGatewayTimeout, "not answered within the request timeout of %s", s.cfg.RequestTimeout)
	case errors.Is(err, translate.ErrClosed):
		return fail(http.StatusServiceUnavailable, "shutting down: send the request to another replica")
	default:
		s.cfg.Logf("model %q: decoding failed: %v", m.name, err)
		return fail(http.StatusInternalServerError, "decoding failed: %v", err)
	}
}

// resolveModel finds the model named by the path or the body (either may
// be empty; both must agree), or the default one.
func (s *Server) resolveModel(fromPath, fromBody string) (*servedModel, int, string) {
	name := fromPath
	switch {
	case fromPath != "" && fromBody != "" && fromPath != fromBody:
		return nil, http.StatusBadRequest, fmt.Sprintf("the path names model %q and the body model %q: name one", fromPath, fromBody)
	case name == "":
		name = fromBody
	}
	if name == "" {
		return s.order[0], 0, ""
	}
	if m := s.models[name]; m != nil {
		return m, 0, ""
	}
	quoted := make([]string, len(s.order))
	for i, m := range s.order {
		quoted[i] = strconv.Quote(m.name)
	}
	return nil, http.StatusNotFound, fmt.Sprintf("unknown model %q: this server serves %s", name, strings.Join(quoted, ", "))
}

// checkRequest validates the fields of req and returns its Job, or a
// message saying what is wrong.
func (s *Server) checkRequest(req *Request, m *servedModel) (Job, string) {
	beam, msg := s.checkBeam(req, m)
	if msg != "" {
		return Job{}, msg
	}
	n := len(req.Inputs) + len(req.IDs)
	switch {
	case req.Inputs != nil && req.IDs != nil:
		return Job{}, `give "inputs" (texts) or "ids" (token id rows), not both`
	case n == 0:
		return Job{}, `no inputs: give "inputs": ["text", ...] or "ids": [[5, 9, 2], ...]`
	case n > s.cfg.MaxInputs:
		return Job{}, fmt.Sprintf("%d inputs: more than the limit of %d per request (--max-inputs); split them into several requests", n, s.cfg.MaxInputs)
	}
	job := beam
	job.IDs = req.IDs // texts are tokenised once the model is known
	job.Attention = req.Attention != nil && *req.Attention
	job.Alignment = req.Alignment != nil && *req.Alignment
	if req.MaxLen != nil {
		if *req.MaxLen < 1 || *req.MaxLen > s.cfg.MaxOutLen {
			return Job{}, fmt.Sprintf("max_len = %d: want 1 to %d (--max-out-len)", *req.MaxLen, s.cfg.MaxOutLen)
		}
		job.MaxLen = *req.MaxLen
	}
	job.MaxLenCap = s.cfg.MaxOutLen
	if job.MinLen > 0 && job.MaxLen > 0 && job.MinLen >= job.MaxLen {
		return Job{}, fmt.Sprintf("min_len = %d: must be below max_len = %d (EOS counts in max_len)", job.MinLen, job.MaxLen)
	}
	return job, ""
}

// maxBeam returns the largest beam a request may ask for, and the flag
// that sets it.
func (s *Server) maxBeam() (int, string) {
	if s.cfg.Batching && s.cfg.MaxBatchRows < s.cfg.MaxBeam {
		// A beam of K holds K of the batch's rows.
		return s.cfg.MaxBatchRows, "--max-batch-rows"
	}
	return s.cfg.MaxBeam, "--max-beam"
}

// checkBeam validates req's beam search fields and returns a Job holding
// them, or a message saying what is wrong.
func (s *Server) checkBeam(req *Request, m *servedModel) (Job, string) {
	job := m.defaults
	if req.Beam != nil {
		most, flag := s.maxBeam()
		if *req.Beam < 1 || *req.Beam > most {
			return Job{}, fmt.Sprintf("beam = %d: want 1 (greedy) to %d (%s)", *req.Beam, most, flag)
		}
		// A request that sets the beam lists one hypothesis unless it
		// sets n_best too.
		job.Beam, job.NBest = *req.Beam, 0
	}
	if req.NBest != nil {
		if k := max(job.Beam, 1); *req.NBest < 1 || *req.NBest > k {
			return Job{}, fmt.Sprintf("n_best = %d: want 1 to beam = %d", *req.NBest, k)
		}
		job.NBest = *req.NBest
	}
	if a := req.LengthPenalty; a != nil {
		if err := decode.LengthPenaltyRange(*a); err != nil {
			return Job{}, fmt.Sprintf("length_penalty = %g: %v", *a, err)
		}
		job.LengthPenalty = a
	}
	if r := req.Rules; r != nil {
		if *r != translate.RulesSpec && *r != translate.RulesOpenNMT && *r != translate.RulesJoeyNMT && *r != translate.RulesFairseq {
			return Job{}, fmt.Sprintf("rules = %q: want %q (attnx's beam search), %q (OpenNMT-py's), %q (JoeyNMT's) or %q (fairseq's SequenceGenerator)", *r, translate.RulesSpec, translate.RulesOpenNMT, translate.RulesJoeyNMT, translate.RulesFairseq)
		}
		form := job.OnmtPenalty
		if job.Rules != translate.RulesOpenNMT && job.PenaltyWu {
			form = "wu"
		}
		job.Rules = *r
		// The model's settings go on only where the rules asked for have
		// them; the request's own are checked below.
		if form == "wu" && !translate.RulesTake(job.Rules, "LengthPenaltyWu") && !translate.RulesTake(job.Rules, "OpenNMTPenalty") {
			form = ""
		}
		job.setForm(form)
		if !translate.RulesTake(job.Rules, "NoRepeatNgram") {
			job.NoRepeatNgram = 0
		}
		if !translate.RulesTake(job.Rules, "RepetitionPenalty") {
			job.RepetitionPenalty = 0
		}
	}
	if f := req.LengthPenaltyForm; f != nil {
		switch {
		case job.Rules == translate.RulesFairseq && *f != "power":
			return Job{}, fmt.Sprintf("length_penalty_form = %q with rules \"fairseq\": fairseq ranks by score / len ** lenpen only (its --lenpen, the request's length_penalty)", *f)
		case job.Rules == translate.RulesJoeyNMT && *f != "wu":
			return Job{}, fmt.Sprintf("length_penalty_form = %q with rules \"joeynmt\": JoeyNMT's beam_alpha is Wu's penalty only (score / ((5 + len) / 6) ** alpha): send \"wu\", or \"rules\": \"spec\" for the power form", *f)
		case job.Rules == translate.RulesOpenNMT && (*f == "none" || *f == "avg" || *f == "wu"),
			job.Rules != translate.RulesOpenNMT && (*f == "power" || *f == "wu"):
			job.setForm(*f)
		case job.Rules == translate.RulesOpenNMT:
			return Job{}, fmt.Sprintf("length_penalty_form = %q with rules \"opennmt\": want \"none\", \"avg\" or \"wu\" (OpenNMT-py's -length_penalty)", *f)
		default:
			return Job{}, fmt.Sprintf("length_penalty_form = %q: want \"power\" (score / len ** alpha) or \"wu\" (score / ((5 + len) / 6) ** alpha); \"none\" and \"avg\" with \"rules\": \"opennmt\"", *f)
		}
	}
	if req.BanUNK != nil {
		job.BanUNK = *req.BanUNK
	}
	if n := req.NoRepeatNgram; n != nil {
		if *n < 0 {
			return Job{}, fmt.Sprintf("no_repeat_ngram = %d: want 0 (off) or an n-gram size", *n)
		}
		job.NoRepeatNgram = *n
	}
	if p := req.RepetitionPenalty; p != nil {
		if math.IsNaN(*p) || math.IsInf(*p, 0) || *p < 0 {
			return Job{}, fmt.Sprintf("repetition_penalty = %v: want a finite value >= 0 (above 1 to act)", *p)
		}
		job.RepetitionPenalty = *p
	}
	if n := req.MinLen; n != nil {
		if *n < 0 || *n >= s.cfg.MaxOutLen {
			return Job{}, fmt.Sprintf("min_len = %d: want 0 to %d, below --max-out-len %d", *n, s.cfg.MaxOutLen-1, s.cfg.MaxOutLen)
		}
		job.MinLen = *n
	}
	if req.ReplaceUnk != nil {
		job.ReplaceUnk = *req.ReplaceUnk
	}
	if job.Rules == translate.RulesFairseq && (job.NoRepeatNgram >= 2 || job.RepetitionPenalty > 1) {
		return Job{}, "no_repeat_ngram and repetition_penalty are JoeyNMT's rules, not fairseq's (fairseq 0.12.2's --no-repeat-ngram-size blocks nothing on a CPU): send \"rules\": \"spec\" or \"joeynmt\" with them"
	}
	job.Toolkit = translate.CallOptions{MaxLenRatio: req.MaxLenRatio, BlockNgram: req.BlockNgramRepeat, IgnoreWhenBlocking: req.IgnoreWhenBlocking,
		Ratio: req.Ratio, UnkPenalty: req.UnkPenalty, Temperature: req.Temperature, MaxLenA: req.MaxLenA, Sampling: req.Sampling,
		CoveragePenalty: req.CoveragePenalty, Beta: req.Beta, StepwisePenalty: req.StepwisePenalty,
		SamplingTopK: req.SamplingTopK, SamplingTopP: req.SamplingTopP, Seed: req.Seed,
		MatchSourceLen: req.MatchSourceLen, DiverseBeamGroups: req.DiverseBeamGroups, DiverseBeamStrength: req.DiverseBeamStrength, DiversityRate: req.DiversityRate}
	if !reflect.ValueOf(job.Toolkit).IsZero() || job.NoRepeatNgram != 0 || job.RepetitionPenalty != 0 || job.PenaltyWu || m.info.Config.HasCopy() {
		// Checked as translate checks them for every surface (a setting
		// the rules lack among them, and the searches a copy model cannot
		// decode with), named as the request names them.
		if c, ok := m.backend.(interface {
			CheckCall(translate.CallOptions) error
		}); ok {
			if err := c.CheckCall(job.callOptions()); err != nil {
				return Job{}, translate.OptionNames(err.Error(), func(o translate.DecodingOption) string { return o.Field })
			}
		}
	}
	return job, ""
}

// decodeRequest reads one JSON object into req. It returns 0 or the status
// and message of what is wrong with the body.
// decodeRequest reads one JSON object into req (a pointer to a request
// type whose JSON fields are fields, for the message on an unknown one).
func decodeRequest(body io.Reader, req any, limit int64, fields string) (int, string) {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(req)
	if err == nil {
		// One value only: anything after it but white space is an error.
		if _, terr := dec.Token(); terr != io.EOF {
			err = terr
			if err == nil {
				return http.StatusBadRequest, "the body holds more than one JSON value: send one object"
			}
		}
	}
	var tooBig *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than the limit of %d bytes (--max-body); split the inputs into several requests", limit)
	case errors.Is(err, io.EOF):
		return http.StatusBadRequest, `empty body: want a JSON object such as {"inputs": ["text"]}`
	case errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest, "body is not valid JSON: it ends in the middle of a value"
	case errors.As(err, &syn):
		return http.StatusBadRequest, fmt.Sprintf("body is not valid JSON: %s (at byte %d)", strings.TrimPrefix(syn.Error(), "json: "), syn.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return http.StatusBadRequest, fmt.Sprintf(`body is a JSON %s: want an object such as {"inputs": ["text"]}`, typ.Value)
		}
		return http.StatusBadRequest, fmt.Sprintf("field %q: got a JSON %s, want %s", typ.Field, typ.Value, describeType(typ.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return http.StatusBadRequest, fmt.Sprintf("%s (the fields are %s)", strings.TrimPrefix(err.Error(), "json: "), fields)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return http.StatusRequestTimeout, "the request body did not arrive in time"
	}
	return http.StatusBadRequest, fmt.Sprintf("reading the body: %v", err)
}

// describeType names a Go type of Request in JSON terms.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describeType(t.Elem())
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, " ")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		enc.Encode(ErrorResponse{Error: "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorResponse{Error: msg})
}
