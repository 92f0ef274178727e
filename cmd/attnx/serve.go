package main

import (
	"context"
	"fmt"
	"github.com/attnx/attnx/internal/idlemem"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/serve"
	"github.com/attnx/attnx/translate"
)

func init() {
	commandDocs["serve"] = `
Serves translations over HTTP with one or more model directories.

  POST /v1/translate   {"inputs": ["text", ...]} or {"ids": [[5, 9, 2], ...]},
                       optional "model" (the default model is the first
                       --model), "pretokenized", "attention", and the
                       decoding fields (docs/decoding.md)
` + wrapNames(serve.DecodingFields(), strings.Repeat(" ", 23), 78) + `
                       (absent: the flag of the same name where serve has
                       one, else the model's default); answers {"model": ...,
                       "results": [...]}, one object per input with the
                       fields of attnx translate --json ("hypotheses" with
                       beam search). /v1/models/NAME/translate names the
                       model in the path.
  GET  /v1/models      the models served, with their vocabularies and limits
  GET  /               the attention viewer (a page for people)
  GET  /healthz        200 while the process runs (liveness)
  GET  /readyz         200 once the models are loaded, 503 while loading and
                       once shutdown begins (readiness)
  GET  /metrics        Prometheus metrics

Continuous batching is on by default: each model has one running decoder
batch, which every request's rows join at the next decoder step and leave
as soon as they finish (at most --max-batch-rows rows at once, then
--max-queue requests wait). --batching off decodes each request alone with
its own Translator call (at most --max-concurrent at once, --engine
choosing the engine). A request whose client goes away, or that runs past
--request-timeout, leaves the batch at the next decoder step; with
--batching off and the loop engine (greedy.onnx, one ONNX Runtime run per
request) its decode runs to its end and the result is dropped.

--onmt-config conf.json serves OpenNMT-py's REST API (onmt_server's) too,
under --url-root (/translator): POST /translator/translate with
[{"id": N, "src": "text"}, ...] answers n_best lists of {"n_best",
"pred_score", "src", "tgt"} as onmt_server does, with GET
/translator/models, /translator/health, /translator/to_cpu/ID (and
unload_model, to_gpu, clone_model refused as JSON errors). Each conf.json
model path names an attnx model directory (attnx export CHECKPOINT -o DIR),
its "opt" sets the decoding of that id's requests, its "tokenizer" must be
the directory's own; preprocess/postprocess hooks (Python) are refused by
name. docs/onmt_server.md has the details.

Bad requests get 4xx with {"error": "..."} saying what is wrong; 429 when
the model's queue is full. SIGTERM or Ctrl-C stops accepting requests,
finishes those in flight and exits 0.`
}

func runServe(args []string) error {
	cfg, addr, err := serveConfig(args)
	if err != nil {
		return err
	}
	srv, err := serve.New(cfg)
	if err != nil {
		return err
	}
	// The model directories are checked before the address is taken:
	// a missing model is the error to see, not a busy port.
	for _, m := range cfg.Models {
		if _, err := translate.ReadDir(m.Dir); err != nil {
			return fmt.Errorf("model %q (%s): %w", m.Name, m.Dir, err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	// The first SIGTERM or SIGINT shuts down gracefully; a second one,
	// during the drain, exits at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		stop()
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "attnx serve: second %s during shutdown: exiting without waiting for requests in flight\n", sig)
			os.Exit(1)
		case <-done:
		}
	}()
	return srv.Serve(ctx, ln)
}

// serveConfig parses attnx serve's arguments into the server's
// configuration and the address to listen on.
func serveConfig(args []string) (serve.Config, string, error) {
	fail := func(msg string) (serve.Config, string, error) { return serve.Config{}, "", &usageError{msg} }
	fs := newFlagSet("serve")
	models := fs.StringArray("model", nil, "model directory `DIR`, or NAME=DIR to choose the name requests use (default: the directory's name); repeatable, the first is the default model")
	addr := fs.String("addr", "127.0.0.1:"+strconv.Itoa(serve.DefaultPort), "listen on `HOST:PORT` (:PORT for every interface)")
	threads := fs.Int("threads", 0, "intra-op threads per session: the native backend's goroutines per product, or ONNX Runtime's pool (0: with batching on, one for models whose decoder step is under 1M multiply-adds a row, else one per core; off, one per core)")
	device := fs.String("device", "cpu", "cpu, cuda or auto (CUDA, else CPU)")
	backend := backendFlag(fs)
	batching := fs.String("batching", "on", "on: continuous batching (requests share one decoder batch per model); off: each request decoded alone")
	engine := fs.String("engine", "", "with --batching off: steps or loop (greedy.onnx); default loop when greedy.onnx exists")
	unk := fs.Bool("unk", false, "map characters or words outside the source vocabulary to <unk> instead of answering 400")
	maxBody := fs.Int64("max-body", serve.DefaultMaxBodyBytes, "largest request body in `bytes` (413 past it)")
	maxInputBytes := fs.Int("max-input-bytes", serve.DefaultMaxInputBytes, "largest input text in `bytes`, checked before the tokenizer runs (413 past it)")
	maxWordChars := fs.Int("max-word-chars", serve.DefaultMaxWordChars, "longest word in `characters` of an input that the model's subword tokenizer segments (its words: a tab is no space to apply_bpe or onmttok), checked before it runs (413 past it)")
	maxInputs := fs.Int("max-inputs", serve.DefaultMaxInputs, "most inputs per request")
	maxSrc := fs.Int("max-src-len", serve.DefaultMaxSourceLen, "most source tokens per input, counted after tokenization (the pieces, not the characters)")
	maxOut := fs.Int("max-out-len", serve.DefaultMaxOutLen, "longest output a row may get: a request whose max_len, max_len_a or max_len_ratio asks more is refused (400), a model's longer limit is cut to it")
	maxBeam := fs.Int("max-beam", serve.DefaultMaxBeam, "largest beam a request may ask for (with batching on, --max-batch-rows bounds it too)")
	maxRows := fs.Int("max-batch-rows", serve.DefaultMaxBatchRows, "with batching on: rows per model decoded together")
	maxConc := fs.Int("max-concurrent", serve.DefaultMaxConcurrent, "with --batching off: requests per model decoding at once")
	maxQueue := fs.Int("max-queue", serve.DefaultMaxQueue, "requests per model waiting for their turn (429 past it)")
	maxReqMem := fs.Int64("max-request-memory", serve.DefaultMaxRequestMemory>>20, "most memory in `MiB` one request may need, estimated from rows x beam x max_len x src_len with the answer (413 past it)")
	maxMem := fs.Int64("max-memory", serve.DefaultMaxMemory>>20, "most memory in `MiB` the requests in flight may need together, the idle buffers kept for the next ones included (429 while it is taken)")
	maxIdle := fs.Int64("max-idle-memory", 0, "most memory in `MiB` kept in idle buffers for the next requests, over all models (default: 128, or a quarter of --max-memory if smaller)")
	idleRelease := fs.Duration("idle-release", idlemem.DefaultTimeout, "drop the idle buffers and hand their memory back after this long without a request")
	reqTimeout := fs.Duration("request-timeout", serve.DefaultRequestTimeout, "longest a request may wait and decode (504 past it)")
	shutTimeout := fs.Duration("shutdown-timeout", serve.DefaultShutdownTimeout, "longest requests in flight get to finish at shutdown")
	allowHosts := fs.StringArray("allow-host", nil, "with --addr on a loopback address: a Host `NAME` to answer besides localhost and the loopback addresses (others get 403, against DNS rebinding); repeatable")
	profiling := fs.Bool("pprof", false, "serve Go's CPU and heap profiles under /debug/pprof/ (for measuring; do not expose)")
	drain := fs.Duration("drain-delay", 0, "after SIGTERM, keep serving this long with /readyz failing before closing the listener (behind a load balancer)")
	beam := fs.Int("beam", 1, "decode requests that set no \"beam\" with beam search of width `K` (1: greedy)")
	nBest := fs.Int("n-best", 1, "hypotheses listed per input when a request sets neither \"beam\" nor \"n_best\" (1 <= N <= --beam)")
	alpha := fs.Float64("length-penalty", translate.DefaultLengthPenalty, "beam search's length penalty `A` for requests that set no \"length_penalty\"")
	penaltyForm := fs.String("length-penalty-form", "power", "the penalty's form for requests that set no \"length_penalty_form\": power (score / len ** A) or wu (score / ((5 + len) / 6) ** A)")
	minLen := fs.Int("min-len", 0, "no EOS before this many output tokens, for requests that set no \"min_len\"")
	replaceUnk := fs.Bool("replace-unk", false, "replace unknown output tokens with the source tokens they attend to most, for requests that set no \"replace_unk\"")
	rules := fs.String("rules", "", "the search for requests that set no \"rules\": spec, opennmt, joeynmt or fairseq (default: each model's own, from its attnx.json)")
	onmtConfig := fs.String("onmt-config", "", "serve OpenNMT-py's REST API (onmt_server's) too, for the models of its `conf.json`: each model path an attnx model directory (attnx export CHECKPOINT -o DIR), each \"opt\" the decoding of that model id's requests (docs/onmt_server.md); instead of --model")
	urlRoot := fs.String("url-root", serve.DefaultOnmtURLRoot, "with --onmt-config: the prefix of onmt_server's routes (its --url_root): /translator/translate, /translator/models, ...")
	banUNK := fs.Bool("ban-unk", false, "never output the unknown token, for requests that set no \"ban_unk\" (OpenNMT-py's -ban_unk_token, JoeyNMT's generate_unk: false)")
	if err := parseFlags(fs, args); err != nil {
		return serve.Config{}, "", err
	}
	if r := *rules; r != "" && r != translate.RulesSpec && r != translate.RulesOpenNMT && r != translate.RulesJoeyNMT && r != translate.RulesFairseq {
		return fail(fmt.Sprintf("--rules %q: want %s", r, translate.RulesList()))
	}
	if *penaltyForm != "power" && *penaltyForm != "wu" {
		return fail(fmt.Sprintf("--length-penalty-form %q: want power or wu", *penaltyForm))
	}
	if err := checkBeamFlags(*beam, *nBest, *alpha); err != nil {
		return serve.Config{}, "", err
	}
	// The decoding flags given override each model's attnx.json defaults;
	// those left out leave them.
	var dec serve.Decoding
	for _, f := range []struct {
		name string
		set  func()
	}{
		{"beam", func() { dec.Beam = beam }},
		{"n-best", func() { dec.NBest = nBest }},
		{"length-penalty", func() { dec.LengthPenalty = alpha }},
		{"length-penalty-form", func() { wu := *penaltyForm == "wu"; dec.PenaltyWu = &wu }},
		{"min-len", func() { dec.MinLen = minLen }},
		{"replace-unk", func() { dec.ReplaceUnk = replaceUnk }},
		{"rules", func() { dec.Rules = *rules }},
		{"ban-unk", func() { dec.BanUNK = banUNK }},
	} {
		if fs.Changed(f.name) {
			f.set()
		}
	}
	if fs.NArg() > 0 {
		return fail(fmt.Sprintf("unexpected argument %q (models are given with --model DIR)", fs.Arg(0)))
	}
	var onmt *serve.OnmtAPI
	switch {
	case *onmtConfig != "" && len(*models) > 0:
		return fail("--onmt-config names the models to serve: give it or --model, not both")
	case *onmtConfig == "" && fs.Changed("url-root"):
		return fail("--url-root goes with --onmt-config")
	case *onmtConfig != "":
		api, dirs, err := serve.ReadOnmtConfig(*onmtConfig, *urlRoot)
		if err != nil {
			return fail(err.Error())
		}
		onmt = api
		for _, d := range dirs {
			*models = append(*models, d.Name+"="+d.Dir)
		}
	case len(*models) == 0:
		return fail("--model DIR is required (or --onmt-config conf.json)")
	}
	if err := checkBackend(*backend, *device); err != nil {
		return serve.Config{}, "", err
	}
	cfg := serve.Config{
		Decoding: dec,
		Backend:  *backend, Threads: *threads, Device: *device, Engine: *engine, UnknownToUNK: *unk,
		MaxBodyBytes: *maxBody, MaxInputBytes: *maxInputBytes, MaxWordChars: *maxWordChars, MaxInputs: *maxInputs, MaxSourceLen: *maxSrc, MaxOutLen: *maxOut, MaxBeam: *maxBeam,
		Batching: *batching == "on", MaxConcurrent: *maxConc, MaxBatchRows: *maxRows, MaxQueue: *maxQueue,
		MaxRequestMemory: *maxReqMem << 20, MaxMemory: *maxMem << 20, MaxIdleMemory: *maxIdle << 20, IdleRelease: *idleRelease, AllowedHosts: *allowHosts,
		Profiling: *profiling, RequestTimeout: *reqTimeout, ShutdownTimeout: *shutTimeout, DrainDelay: *drain,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "attnx serve: "+format+"\n", args...) },
	}
	if onmt != nil {
		// onmt_server translates words outside the vocabulary as <unk>.
		cfg.Onmt, cfg.UnknownToUNK = onmt, true
		for _, m := range onmt.Models {
			for _, n := range m.Notes {
				cfg.Logf("onmt model %d: %s", m.ID, n)
			}
		}
	}
	for _, m := range *models {
		md, err := serve.ParseModelDir(m)
		if err != nil {
			return fail(err.Error())
		}
		cfg.Models = append(cfg.Models, md)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"--max-body", *maxBody}, {"--max-input-bytes", int64(*maxInputBytes)}, {"--max-word-chars", int64(*maxWordChars)}, {"--max-inputs", int64(*maxInputs)}, {"--max-src-len", int64(*maxSrc)}, {"--max-out-len", int64(*maxOut)}, {"--max-beam", int64(*maxBeam)},
		{"--max-concurrent", int64(*maxConc)}, {"--max-batch-rows", int64(*maxRows)}, {"--max-queue", int64(*maxQueue)},
		{"--request-timeout", int64(*reqTimeout)}, {"--shutdown-timeout", int64(*shutTimeout)},
		{"--max-request-memory", *maxReqMem}, {"--max-memory", *maxMem},
	} {
		if f.v < 1 {
			return fail(fmt.Sprintf("%s: must be positive", f.name))
		}
	}
	switch {
	case *threads < 0:
		return fail(fmt.Sprintf("--threads %d: must not be negative", *threads))
	case *drain < 0:
		return fail(fmt.Sprintf("--drain-delay %s: must not be negative", *drain))
	case *batching != "on" && *batching != "off":
		return fail(fmt.Sprintf("--batching %q: want on or off", *batching))
	case *engine != "" && *batching == "on":
		return fail(fmt.Sprintf("--engine %s: the engine is chosen with --batching off only (continuous batching runs the steps engine)", *engine))
	case *engine != "" && *engine != translate.EngineSteps && *engine != translate.EngineLoop:
		return fail(fmt.Sprintf("--engine %q: want %s or %s", *engine, translate.EngineSteps, translate.EngineLoop))
	case *device != onnxrun.DeviceCPU && *device != onnxrun.DeviceCUDA && *device != onnxrun.DeviceAuto:
		return fail(fmt.Sprintf("--device %q: want cpu, cuda or auto", *device))
	}
	return cfg, *addr, nil
}

// wrapNames writes names, quoted and separated by commas, in lines of at
// most width columns, each beginning with indent.
func wrapNames(names []string, indent string, width int) string {
	var b, line strings.Builder
	for i, n := range names {
		word := strconv.Quote(n)
		if i < len(names)-1 {
			word += ","
		}
		if line.Len() > 0 && len(indent)+line.Len()+1+len(word) > width {
			b.WriteString(indent + line.String() + "\n")
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(word)
	}
	b.WriteString(indent + line.String())
	return b.String()
}
