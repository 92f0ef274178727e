package serve

import (
	"fmt"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/idlemem"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// Defaults of Config's limits, used where a field is 0.
const (
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxInputBytes bounds one input text before it is tokenised:
	// 256 source tokens (DefaultMaxSourceLen) of even long pieces fit.
	DefaultMaxInputBytes = 16 << 10
	// DefaultMaxWordChars bounds one word of an input given to a subword
	// tokenizer: longer than any word of any language's text, shorter
	// than what makes segmenting it costly.
	DefaultMaxWordChars   = 1000
	DefaultMaxInputs      = 64
	DefaultMaxSourceLen   = 256
	DefaultMaxOutLen      = 512
	DefaultMaxBeam        = 16
	DefaultMaxConcurrent  = 64
	DefaultMaxBatchRows   = 64
	DefaultMaxQueue       = 256
	DefaultRequestTimeout = 60 * time.Second
	// readHeaderTimeout bounds reading a request's headers, idleTimeout a
	// keep-alive connection's wait for its next request, and writeMargin
	// what writing an answer may take past the request timeout.
	readHeaderTimeout      = 10 * time.Second
	idleTimeout            = 2 * time.Minute
	writeMargin            = 30 * time.Second
	DefaultShutdownTimeout = 25 * time.Second
)

// ModelDir is one model to serve: the name requests use and its directory.
type ModelDir struct {
	Name string
	Dir  string
}

var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseModelDir parses the value of `attnx serve --model`: NAME=DIR, or
// DIR alone, named after its last path element.
func ParseModelDir(s string) (ModelDir, error) {
	name, dir, ok := strings.Cut(s, "=")
	if !ok {
		dir = s
		name = filepath.Base(filepath.Clean(s))
	}
	if dir == "" {
		return ModelDir{}, fmt.Errorf("--model %q: no directory (want NAME=DIR or DIR)", s)
	}
	if !modelName.MatchString(name) {
		return ModelDir{}, fmt.Errorf("--model %q: model name %q must be letters, digits, '.', '_' or '-', starting with a letter or digit (give NAME=DIR to choose one)", s, name)
	}
	return ModelDir{Name: name, Dir: dir}, nil
}

// Config configures a Server. Zero limits take the defaults above.
type Config struct {
	// Models are served by name; the first is the default one.
	Models []ModelDir
	// Decoding holds the decoding flags given to attnx serve, which
	// override each model's attnx.json defaults; each request field
	// overrides both (see Decoding).
	Decoding Decoding
	// Threads is the intra-op thread count per session, the native
	// backend's or ONNX Runtime's (0: with Batching, BatchingThreads of the
	// model: one for small models; else one per core).
	Threads int
	// Device is "cpu" (or ""), "cuda" or "auto".
	Device string
	// Backend is the graph engine (translate.Options.Backend): "ort", "go"
	// or "" for the build's default.
	Backend string
	// Batching decodes each model's requests with one continuous-batching
	// scheduler (OpenBatchingBackend): rows of concurrent requests share
	// the decoder's batch, joining and leaving it between steps. Off, each
	// request is one Translator call decoded alone (OpenTranslatorBackend).
	// `attnx serve` turns it on by default.
	Batching bool
	// Engine is the translate engine when batching is off ("", "steps" or
	// "loop"); batching always runs the steps engine.
	Engine string
	// UnknownToUNK maps characters or words outside the source vocabulary
	// to UNK instead of answering 400.
	UnknownToUNK bool

	// MaxBodyBytes bounds a request body (413 past it).
	MaxBodyBytes int64
	// MaxInputs bounds the inputs of one request.
	MaxInputs int
	// MaxInputBytes bounds one input text's bytes, checked before any
	// tokenizer runs (413 past it).
	MaxInputBytes int
	// MaxIdleMemory bounds the bytes the process keeps in idle buffers
	// for the next requests (evaluator arenas, decoding executors), over
	// all models; 0 means idlemem.DefaultLimit. They count in MaxMemory,
	// and are dropped when a request needs their room.
	MaxIdleMemory int64
	// IdleRelease is how long the server may go without a request before
	// the idle buffers are dropped and their memory handed back to the
	// operating system; 0 means idlemem.DefaultTimeout.
	IdleRelease time.Duration
	// MaxWordChars bounds the characters of one word of an input that a
	// subword tokenizer segments, words as that tokenizer splits them
	// (subword.Spec.LongestWord: a tab joins two for apply_bpe and
	// onmttok), checked before it runs (413 past it).
	MaxWordChars int
	// MaxSourceLen bounds the source tokens of one input, counted after
	// tokenization.
	MaxSourceLen int
	// MaxOutLen bounds every row's output limit, whatever gives it
	// (translate.Translator.OutputLimits): a request whose max_len,
	// max_len_a or max_len_ratio gives a row more is refused 400 naming
	// the field; a longer limit the request does not ask for (the model's
	// own, 2n+10) is cut to it.
	MaxOutLen int
	// MaxBeam bounds a request's beam width (with batching on, MaxBatchRows
	// bounds it too: a beam of K takes K of the batch's rows).
	MaxBeam int
	// MaxRequestMemory bounds the memory one request may need, as
	// requestMemory estimates it (413 past it); MaxMemory bounds what the
	// requests in flight may need together (429 while it is taken).
	MaxRequestMemory, MaxMemory int64
	// MaxConcurrent bounds the requests of one model handed to its backend
	// at once when batching is off; MaxBatchRows bounds the rows (decoder
	// slots) of one model decoded together when it is on. MaxQueue bounds
	// the requests waiting for their turn (with batching on: for their rows
	// to join the batch); past it, 429.
	MaxConcurrent int
	MaxBatchRows  int
	MaxQueue      int
	// RequestTimeout bounds the time a request may wait and decode (504
	// past it).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the time requests in flight get to finish
	// once shutdown begins.
	ShutdownTimeout time.Duration
	// DrainDelay keeps serving for this long after shutdown begins, with
	// readiness already failing, so that a load balancer stops sending
	// requests before the listener closes.
	DrainDelay time.Duration

	// AllowedHosts are Host names served besides localhost and the
	// loopback addresses when listening on a loopback address (requests
	// naming any other host are refused, against DNS rebinding).
	AllowedHosts []string

	// Profiling serves Go's profiles under /debug/pprof/ (net/http/pprof),
	// for measuring the server under load; off by default.
	Profiling bool

	// Onmt, when set, serves OpenNMT-py's REST API (onmt_server's) too,
	// for the models of its conf.json (ReadOnmtConfig).
	Onmt *OnmtAPI

	// Open opens a model's backend; nil means OpenBatchingBackend with
	// Batching, else OpenTranslatorBackend.
	Open Opener
	// Logf, when set, receives one line per lifecycle event and per
	// internal error.
	Logf func(format string, args ...any)
}

// Decoding is the server's decoding defaults (attnx serve's --beam,
// --n-best, --length-penalty, --length-penalty-form, --min-len and
// --replace-unk): a field that is set overrides every model's attnx.json
// "defaults"; nil leaves them, and the built-in default (greedy,
// translate's length penalty, no extra rules) where a model has none. A
// request's own fields override both.
type Decoding struct {
	// Beam is the beam width (1: greedy), NBest the hypotheses listed
	// per input.
	Beam, NBest *int
	// LengthPenalty is beam search's alpha; PenaltyWu ranks by score /
	// ((5 + len) / 6) ** alpha instead of score / len ** alpha.
	LengthPenalty *float64
	PenaltyWu     *bool
	// MinLen keeps EOS out of the first MinLen output tokens.
	MinLen *int
	// ReplaceUnk replaces unknown output tokens with the source tokens
	// they attend to most.
	ReplaceUnk *bool
	// Rules are the search's rules ("": each model's own); BanUNK never
	// outputs the unknown token.
	Rules  string
	BanUNK *bool
}

// job returns the decoding of a request that sets nothing, for a model
// whose attnx.json has defaults md (nil: none): the flags given (d)
// resolved over md as every surface resolves them
// (translate.ResolveDecoding).
func (d Decoding) job(md *modeldir.Defaults) Job {
	var given translate.Options
	if d.Beam != nil {
		given.Beam = *d.Beam
	}
	if d.NBest != nil {
		given.NBest = *d.NBest
	}
	given.LengthPenalty = d.LengthPenalty
	given.Rules = d.Rules
	if d.MinLen != nil {
		given.MinLen = *d.MinLen
	}
	r := translate.ResolveDecoding(given, md)
	j := Job{Beam: r.Beam, NBest: r.NBest, LengthPenalty: r.LengthPenalty, MinLen: r.MinLen, ReplaceUnk: r.ReplaceUnk,
		Rules: r.Rules, BanUNK: r.BanUNK, NoRepeatNgram: r.NoRepeatNgram, RepetitionPenalty: r.RepetitionPenalty}
	form := r.OpenNMTPenalty
	if r.Rules != translate.RulesOpenNMT && r.LengthPenaltyWu {
		form = "wu"
	}
	j.setForm(form)
	if d.PenaltyWu != nil {
		j.PenaltyWu = *d.PenaltyWu
		if j.Rules == translate.RulesOpenNMT {
			j.setForm(map[bool]string{true: "wu", false: "avg"}[*d.PenaltyWu])
		}
	}
	if d.MinLen != nil {
		j.MinLen = *d.MinLen // 0 given is 0, not the model's
	}
	if d.ReplaceUnk != nil {
		j.ReplaceUnk = *d.ReplaceUnk
	}
	if d.BanUNK != nil {
		j.BanUNK = *d.BanUNK
	}
	return j
}

// checkDefaults validates a model's default decoding against the
// server's limits; where names where the values came from.
func checkDefaults(j Job, maxBeam, maxOut int, where string) error {
	switch a := j.LengthPenalty; {
	case j.Beam < 0 || j.Beam > maxBeam:
		return fmt.Errorf("serve: %s: beam %d: want 1 (greedy) to %d (--max-beam)", where, j.Beam, maxBeam)
	case j.NBest < 0 || j.NBest > max(j.Beam, 1):
		return fmt.Errorf("serve: %s: n_best %d: want 1 to beam %d", where, j.NBest, max(j.Beam, 1))
	case a != nil && decode.LengthPenaltyRange(*a) != nil:
		return fmt.Errorf("serve: %s: length_penalty %g: %v", where, *a, decode.LengthPenaltyRange(*a))
	case j.MinLen < 0 || j.MinLen >= maxOut:
		return fmt.Errorf("serve: %s: min_len %d: want 0 to %d, below --max-out-len %d", where, j.MinLen, maxOut-1, maxOut)
	}
	return nil
}

// withDefaults validates c and fills in zero limits.
func (c Config) withDefaults() (Config, error) {
	if len(c.Models) == 0 {
		return c, fmt.Errorf("serve: no model to serve (give --model DIR or NAME=DIR)")
	}
	seen := map[string]bool{}
	for _, m := range c.Models {
		if !modelName.MatchString(m.Name) {
			return c, fmt.Errorf("serve: model name %q must be letters, digits, '.', '_' or '-', starting with a letter or digit", m.Name)
		}
		if seen[m.Name] {
			return c, fmt.Errorf("serve: two models are named %q (give NAME=DIR to tell them apart)", m.Name)
		}
		seen[m.Name] = true
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Threads", int64(c.Threads)}, {"MaxBodyBytes", c.MaxBodyBytes}, {"MaxInputBytes", int64(c.MaxInputBytes)}, {"MaxWordChars", int64(c.MaxWordChars)}, {"MaxInputs", int64(c.MaxInputs)},
		{"MaxSourceLen", int64(c.MaxSourceLen)}, {"MaxOutLen", int64(c.MaxOutLen)}, {"MaxBeam", int64(c.MaxBeam)}, {"MaxConcurrent", int64(c.MaxConcurrent)},
		{"MaxQueue", int64(c.MaxQueue)}, {"MaxBatchRows", int64(c.MaxBatchRows)}, {"RequestTimeout", int64(c.RequestTimeout)},
		{"ShutdownTimeout", int64(c.ShutdownTimeout)}, {"DrainDelay", int64(c.DrainDelay)},
		{"MaxRequestMemory", c.MaxRequestMemory}, {"MaxMemory", c.MaxMemory}, {"MaxIdleMemory", c.MaxIdleMemory}, {"IdleRelease", int64(c.IdleRelease)},
	} {
		if f.v < 0 {
			return c, fmt.Errorf("serve: %s = %d: must not be negative", f.name, f.v)
		}
	}
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	def(&c.MaxInputBytes, DefaultMaxInputBytes)
	def(&c.MaxWordChars, DefaultMaxWordChars)
	def(&c.MaxInputs, DefaultMaxInputs)
	def(&c.MaxSourceLen, DefaultMaxSourceLen)
	def(&c.MaxOutLen, DefaultMaxOutLen)
	def(&c.MaxBeam, DefaultMaxBeam)
	def(&c.MaxConcurrent, DefaultMaxConcurrent)
	def(&c.MaxQueue, DefaultMaxQueue)
	def(&c.MaxBatchRows, DefaultMaxBatchRows)
	if c.MaxRequestMemory == 0 {
		c.MaxRequestMemory = DefaultMaxRequestMemory
	}
	if c.MaxMemory == 0 {
		c.MaxMemory = DefaultMaxMemory
	}
	if c.MaxIdleMemory == 0 {
		c.MaxIdleMemory = min(idlemem.DefaultLimit, c.MaxMemory/4)
	}
	if c.IdleRelease == 0 {
		c.IdleRelease = idlemem.DefaultTimeout
	}
	if err := checkDefaults(c.Decoding.job(nil), c.MaxBeam, c.MaxOutLen, "the decoding flags"); err != nil {
		return c, err
	}
	if c.MaxRequestMemory > c.MaxMemory {
		return c, fmt.Errorf("serve: the per-request memory budget %s (--max-request-memory) is larger than the server's %s (--max-memory)", mib(c.MaxRequestMemory), mib(c.MaxMemory))
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Open == nil {
		c.Open = OpenTranslatorBackend
		if c.Batching {
			c.Open = OpenBatchingBackend
		}
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c, nil
}
