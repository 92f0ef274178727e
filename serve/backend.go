package serve

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/subword"
	"github.com/attnx/attnx/translate"
)

// ErrQueueFull is returned (wrapped) when a request cannot be admitted
// because the model's queue is full; the server answers 429.
var ErrQueueFull = errors.New("serve: queue full")

// Job is one request's work for a Backend: its source rows and decoding
// settings.
type Job struct {
	// IDs are source token id rows: a request's own, or its texts as
	// Backend.Tokenize made them.
	IDs [][]int64
	// Words are, for a copy-attention model's texts, each row's own words
	// outside the source vocabulary (translate.Sources.Words): nil for a
	// request's own ids, whose ids from the vocabulary's size up are
	// refused.
	Words [][]string
	// MaxLen is the most output tokens per row, EOS included; 0 means
	// the model's limit, else 2n+10 for a source of n tokens.
	MaxLen int
	// MaxLenCap, when above 0, bounds every row's output limit whatever
	// gives it (translate.CallOptions.MaxLenCap): the server's
	// --max-out-len.
	MaxLenCap int
	// Beam > 1 runs beam search of that width, listing NBest hypotheses
	// (0: 1) ranked with length penalty LengthPenalty (nil: the default).
	Beam, NBest   int
	LengthPenalty *float64
	// PenaltyWu ranks by score / ((5 + len) / 6) ** alpha; MinLen keeps
	// EOS out of the first MinLen tokens; ReplaceUnk replaces unknown
	// output tokens by the source tokens they attend to most.
	PenaltyWu  bool
	MinLen     int
	ReplaceUnk bool
	// Rules are beam search's rules (translate.RulesSpec, RulesOpenNMT,
	// RulesJoeyNMT or RulesFairseq; "": spec), OnmtPenalty OpenNMT-py's length penalty
	// under RulesOpenNMT (none, avg, wu) and BanUNK its -ban_unk_token.
	Rules       string
	OnmtPenalty string
	BanUNK      bool
	// NoRepeatNgram and RepetitionPenalty are JoeyNMT's repetition rules
	// for beam search.
	NoRepeatNgram     int
	RepetitionPenalty float64
	// Attention records each result's attention and answers it; without
	// it the results have none.
	Attention bool
	// Alignment records each result's attention for its hard alignment
	// and answers the alignment but not the weights.
	Alignment bool
	// Toolkit holds the toolkits' other settings the request gave (as
	// translate.CallOptions has them; zero: none given).
	Toolkit translate.CallOptions
	// AsTestSet gives each row the output limit of the batch the model's
	// toolkit would put it in, the request's inputs taken as its test set
	// (translate.CallOptions.AsTestSet): set for a model whose limits
	// follow its toolkit's batches when the request sets no max_len.
	AsTestSet bool
}

// sources returns the job's rows with their words.
func (job Job) sources() translate.Sources {
	return translate.Sources{Rows: job.IDs, Words: job.Words}
}

// callOptions returns the translate settings of job.
func (job Job) callOptions() translate.CallOptions {
	t := job.Toolkit
	return translate.CallOptions{UnkPenalty: t.UnkPenalty, Temperature: t.Temperature, MaxLenA: t.MaxLenA, MaxLenRatio: t.MaxLenRatio,
		BlockNgram: t.BlockNgram, IgnoreWhenBlocking: t.IgnoreWhenBlocking, Ratio: t.Ratio, Sampling: t.Sampling, SamplingTopK: t.SamplingTopK,
		CoveragePenalty: t.CoveragePenalty, Beta: t.Beta, StepwisePenalty: t.StepwisePenalty,
		SamplingTopP: t.SamplingTopP, Seed: t.Seed, MaxLen: job.MaxLen, MaxLenCap: job.MaxLenCap, Beam: job.Beam, NBest: job.NBest, LengthPenalty: job.LengthPenalty,
		LengthPenaltyWu: &job.PenaltyWu, MinLen: job.MinLen, ReplaceUnk: &job.ReplaceUnk, WithoutAttention: !job.Attention && !job.Alignment, AsTestSet: job.AsTestSet,
		Rules: job.Rules, OpenNMTPenalty: job.OnmtPenalty, BanUNK: &job.BanUNK, NoRepeatNgram: &job.NoRepeatNgram, RepetitionPenalty: &job.RepetitionPenalty,
		Prefixes: t.Prefixes, MatchSourceLen: t.MatchSourceLen, DiverseBeamGroups: t.DiverseBeamGroups, DiverseBeamStrength: t.DiverseBeamStrength,
		DiversityRate: t.DiversityRate}
}

// perCall reports whether job needs the per-call search settings of the
// steps engine: beam search, or a rule the Translator's own settings lack.
func (job Job) perCall() bool {
	return job.Beam > 1 || job.AsTestSet || !reflect.ValueOf(job.Toolkit).IsZero() || job.PenaltyWu || job.MinLen > 0 || job.ReplaceUnk || job.BanUNK || job.NoRepeatNgram > 0 || job.RepetitionPenalty > 0 ||
		job.Rules == translate.RulesOpenNMT || job.Rules == translate.RulesJoeyNMT || job.Rules == translate.RulesFairseq
}

// Backend decodes the requests of one model. Implementations are safe for
// concurrent use.
type Backend interface {
	// Translate decodes the job's rows and returns one result per row, in
	// order. A bad row is a *translate.InputError; a cancelled or expired
	// ctx returns ctx.Err() (wrapped or not) as soon as the backend can stop.
	Translate(ctx context.Context, job Job) ([]translate.Result, error)
	// Tokenize makes source rows of texts with the model's tokenizer and
	// vocabulary (translate.Translator.Tokenize); a text that cannot be
	// tokenised is a *translate.InputError naming its row. It stops with
	// ctx.Err() once ctx is done.
	// pretokenized takes the texts as source pieces already.
	Tokenize(ctx context.Context, texts []string, pretokenized bool) (translate.Sources, error)
	// Info returns the model directory's attnx.json.
	Info() modeldir.Info
	// Close releases the model once no call is in progress.
	Close() error
}

// SchedulingBackend is a Backend that admits requests itself, as the
// continuous-batching one does: the server puts no limiter of its own in
// front of it (Translate fails at once with an error wrapping ErrQueueFull
// when its queue is full), reports its queue as the queue depth, and
// exports its scheduler's counters.
type SchedulingBackend interface {
	Backend
	// QueueDepth returns the requests whose rows wait to join the batch.
	QueueDepth() int
	// Stats returns the scheduler's counters.
	Stats() decode.SchedulerStats
}

// BatchObserver receives the number of rows of every batch a backend
// decodes (a Translator call when batching is off, a decoder step when it
// is on), for the batch-size histogram.
type BatchObserver func(rows int)

// Opener opens the backend of one model directory. Config.Open defaults to
// OpenBatchingBackend or OpenTranslatorBackend, as Config.Batching says.
type Opener func(dir string, cfg *Config, obs BatchObserver) (Backend, error)

// translatorBackend is batching off: every request is one call of a
// translate.Translator, decoded alone (the Translator runs concurrent
// calls side by side on shared sessions).
type translatorBackend struct {
	dir    string
	opt    translate.Options
	def    *translate.Translator
	obs    BatchObserver
	maxOut int
	eos    int64

	lazyMu sync.Mutex
	long   *translate.Translator // opened on first need; MaxLen = maxOut
	beam   *translate.Translator // opened on first need; the steps engine, for beam search
}

// OpenTranslatorBackend opens dir with a translate.Translator configured
// from cfg (threads, device, engine, unknown-token mapping, source length
// limit): the backend used when batching is off.
func OpenTranslatorBackend(dir string, cfg *Config, obs BatchObserver) (Backend, error) {
	opt := translate.Options{
		Backend: cfg.Backend, Threads: cfg.Threads, Device: cfg.Device, Engine: cfg.Engine,
		MaxSourceLen: cfg.MaxSourceLen, BatchSize: cfg.MaxInputs, UnknownToUNK: cfg.UnknownToUNK,
		// Each request is decoded as its Job says, the model's defaults
		// resolved into it (Decoding.job); the Translator's own settings
		// are the greedy fast path's.
		NoModelDefaults: true,
	}
	tr, err := translate.Open(dir, opt)
	if err != nil {
		return nil, err
	}
	if obs == nil {
		obs = func(int) {}
	}
	eos := tr.Info().Special.EOS
	return &translatorBackend{dir: dir, opt: opt, def: tr, obs: obs, maxOut: cfg.MaxOutLen, eos: eos}, nil
}

func (b *translatorBackend) Info() modeldir.Info { return b.def.Info() }

// CheckCall checks a request's settings as the Translator checks a call's.
func (b *translatorBackend) CheckCall(opt translate.CallOptions) error { return b.def.CheckCall(opt) }

// CheckCall checks a request's settings as the Translator checks a call's.
func (b *batchingBackend) CheckCall(opt translate.CallOptions) error { return b.tr.CheckCall(opt) }

func (b *translatorBackend) LooksSegmented(text string) string { return b.def.LooksSegmented(text) }

func (b *batchingBackend) LooksSegmented(text string) string { return b.tr.LooksSegmented(text) }

func (b *translatorBackend) TokenizerCache() subword.CacheStats { return b.def.TokenizerCache() }

// EncodePrefixes tokenises target prefixes (translate.Translator.EncodePrefixes).
func (b *translatorBackend) EncodePrefixes(texts []string) ([][]int64, error) {
	return b.def.EncodePrefixes(texts)
}

// EncodePrefixes tokenises target prefixes (translate.Translator.EncodePrefixes).
func (b *batchingBackend) EncodePrefixes(texts []string) ([][]int64, error) {
	return b.tr.EncodePrefixes(texts)
}

func (b *translatorBackend) Tokenize(ctx context.Context, texts []string, pretokenized bool) (translate.Sources, error) {
	return b.def.Tokenize(ctx, texts, pretokenized)
}

// Translate decodes with the Translator's default limit (2n+10), then
// applies each row's own (OutputLimits: job.MaxLen, within the cap):
// greedy decoding is prefix-stable (a row's first k tokens do not depend
// on its limit or on the other rows), so a shorter limit is a cut, and a
// row that stopped at the default limit without EOS and is allowed more
// is decoded again with a Translator whose limit is the server's
// MaxOutLen, then cut.
func (b *translatorBackend) Translate(ctx context.Context, job Job) ([]translate.Result, error) {
	if job.perCall() {
		return b.translateCall(ctx, job)
	}
	limits, err := b.OutputLimits(job)
	if err != nil {
		return nil, err
	}
	res, err := b.def.TranslateSources(ctx, job.sources())
	if err != nil {
		return nil, err
	}
	b.obs(len(res))
	var again []int
	for i, r := range res {
		n := len(r.Tokens)
		if limits[i].Max > n && n == b.def.Limit(len(r.Source)) && r.Tokens[n-1] != b.eos {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		opt := b.opt
		opt.MaxLen = b.maxOut
		long, err := b.lazy(&b.long, opt, "max_len above the default limit")
		if err != nil {
			return nil, err
		}
		// The job's own rows: a result's Source is the encoder's, a copy
		// model's words outside the vocabulary as UNK.
		src := translate.Sources{Rows: make([][]int64, len(again))}
		if job.Words != nil {
			src.Words = make([][]string, len(again))
		}
		for k, i := range again {
			src.Rows[k] = job.IDs[i]
			if job.Words != nil {
				src.Words[k] = job.Words[i]
			}
		}
		more, err := long.TranslateSources(ctx, src)
		if err != nil {
			return nil, err
		}
		b.obs(len(src.Rows))
		for k, i := range again {
			res[i] = more[k]
		}
	}
	for i := range res {
		b.def.CutGreedy(&res[i], limits[i].Max) // its hypothesis and scores too
	}
	return res, nil
}

// OutputLimits returns the output limits the job's rows get: the
// Translator's (translate.Translator.OutputLimits), whichever path
// decodes them.
func (b *translatorBackend) OutputLimits(job Job) ([]translate.Limits, error) {
	return b.def.OutputLimits(job.IDs, job.callOptions())
}

// OutputLimits returns the output limits the job's rows get in the
// shared batch (translate.Translator.OutputLimits).
func (b *batchingBackend) OutputLimits(job Job) ([]translate.Limits, error) {
	return b.tr.OutputLimits(job.IDs, job.callOptions())
}

// translateCall decodes the job's rows (beam search, or greedy decoding
// with rules of its own), alone as `attnx translate --beam K` does, on a
// Translator of the steps engine with the job's settings for this call.
func (b *translatorBackend) translateCall(ctx context.Context, job Job) ([]translate.Result, error) {
	opt := b.opt
	opt.Engine = translate.EngineSteps
	tr, err := b.lazy(&b.beam, opt, "beam search and per-request decoding rules")
	if err != nil {
		return nil, err
	}
	res, err := tr.TranslateSourcesCall(ctx, job.sources(), job.callOptions())
	if err == nil {
		b.obs(len(res))
	}
	return res, err
}

// lazy returns *p, opening it with opt on first need (for what why says).
func (b *translatorBackend) lazy(p **translate.Translator, opt translate.Options, why string) (*translate.Translator, error) {
	b.lazyMu.Lock()
	defer b.lazyMu.Unlock()
	if *p == nil {
		tr, err := translate.Open(b.dir, opt)
		if err != nil {
			return nil, fmt.Errorf("opening the model for %s: %w", why, err)
		}
		*p = tr
	}
	return *p, nil
}

func (b *translatorBackend) Close() error {
	b.lazyMu.Lock()
	defer b.lazyMu.Unlock()
	err := b.def.Close()
	for _, tr := range []*translate.Translator{b.long, b.beam} {
		if tr != nil {
			err = errors.Join(err, tr.Close())
		}
	}
	return err
}

// batchingBackend is batching on: every request's rows join one running
// decoder batch per model (translate.Scheduler), as far as the batch's
// bound allows, and leave it as they finish.
type batchingBackend struct {
	tr       *translate.Translator
	sched    *translate.Scheduler
	maxRows  int
	maxQueue int
}

// BatchingThreads returns the intra-op threads per session the batching
// backend uses for a model of configuration c when Config.Threads is 0:
// one when the decoder's step is small (under SmallStepMACs multiply-adds
// a row), the engine's default (0: one per core) otherwise. The rule was
// measured on ONNX Runtime (below). All of a model's decoding runs on the scheduler goroutine,
// one session run at a time, beside the request handlers. A small step
// gains less from a second thread than waking it costs, and the thread
// takes a core the handlers need: with the demo's Luong model (H=64, an
// output vocabulary of 15: 42k multiply-adds a row) one thread gave 14%
// more sentences/s at 32 clients than two (9 alternating runs), and a
// 16-row step took 53 us on one thread, 75 us on two. A large step is
// worth splitting: with H=256 and vocabularies of 10,000 (3.2M) two threads
// gave 25% more (2 rounds).
func BatchingThreads(c attention.Config) int {
	if StepMACs(c) < SmallStepMACs {
		return 1
	}
	return 0
}

// SmallStepMACs is the decoder step size, in multiply-adds a row, under
// which BatchingThreads gives ORT one thread: a rule of thumb between the
// two models measured (42k and 3.2M).
const SmallStepMACs = 1 << 20

// StepMACs estimates the multiply-adds of one decoder step for one row of a
// model of configuration c: the recurrent cell's gates in every layer, two
// H x H products for the attention and its output, and the classifier.
func StepMACs(c attention.Config) int64 {
	c = c.WithDefaults()
	gates := int64(4)
	if c.Cell == attention.GRU {
		gates = 3
	}
	H, E, L := int64(c.Hidden), int64(c.Embedding), int64(max(c.Layers, 1))
	return gates*H*(E+H) + (L-1)*gates*H*2*H + 2*H*H + H*int64(c.TgtVocab)
}

// OpenBatchingBackend opens dir with a translate.Translator on the steps
// engine configured from cfg (threads, by default BatchingThreads; device,
// unknown-token mapping, source length limit) and starts its
// continuous-batching scheduler: at
// most cfg.MaxBatchRows rows decode together and cfg.MaxQueue requests
// wait for room (past that, ErrQueueFull). obs receives the rows of every
// decoder step. It is the backend used when batching is on.
func OpenBatchingBackend(dir string, cfg *Config, obs BatchObserver) (Backend, error) {
	threads := cfg.Threads
	if threads == 0 {
		// The model's size decides; an unreadable attnx.json is left to
		// translate.Open to report.
		if info, err := modeldir.ReadInfo(filepath.Join(dir, modeldir.InfoFile)); err == nil {
			threads = BatchingThreads(info.Config)
		}
	}
	tr, err := translate.Open(dir, translate.Options{
		Backend: cfg.Backend, Threads: threads, Device: cfg.Device, Engine: translate.EngineSteps,
		MaxSourceLen: cfg.MaxSourceLen, UnknownToUNK: cfg.UnknownToUNK,
		NoModelDefaults: true, // each request's Job carries them
	})
	if err != nil {
		return nil, err
	}
	sched, err := tr.NewScheduler(decode.SchedulerConfig{MaxSlots: cfg.MaxBatchRows, MaxQueue: cfg.MaxQueue, Observe: obs})
	if err != nil {
		tr.Close()
		return nil, err
	}
	return &batchingBackend{tr: tr, sched: sched, maxRows: cfg.MaxBatchRows, maxQueue: cfg.MaxQueue}, nil
}

func (b *batchingBackend) Info() modeldir.Info { return b.tr.Info() }

func (b *batchingBackend) TokenizerCache() subword.CacheStats { return b.tr.TokenizerCache() }

func (b *batchingBackend) Tokenize(ctx context.Context, texts []string, pretokenized bool) (translate.Sources, error) {
	return b.tr.Tokenize(ctx, texts, pretokenized)
}

func (b *batchingBackend) Translate(ctx context.Context, job Job) ([]translate.Result, error) {
	opt := job.callOptions()
	res, err := b.sched.TranslateSources(ctx, job.sources(), opt)
	if errors.Is(err, decode.ErrQueueFull) {
		return nil, fmt.Errorf("%w: %d requests waiting for room in a batch of %d rows", ErrQueueFull, b.maxQueue, b.maxRows)
	}
	return res, err
}

func (b *batchingBackend) QueueDepth() int              { return b.sched.QueueDepth() }
func (b *batchingBackend) Stats() decode.SchedulerStats { return b.sched.Stats() }

func (b *batchingBackend) Close() error {
	b.sched.Close()
	return b.tr.Close()
}

// limiter bounds the requests of one model: at most conc are handed to the
// backend at once and at most queue more wait for their turn; past that,
// acquire fails with ErrQueueFull at once.
type limiter struct {
	slots   chan struct{}
	admit   int64 // conc + queue
	in      atomic.Int64
	waiting atomic.Int64
}

func newLimiter(conc, queue int) *limiter {
	return &limiter{slots: make(chan struct{}, conc), admit: int64(conc + queue)}
}

// acquire waits for a slot; the returned release gives it back.
func (l *limiter) acquire(ctx context.Context) (release func(), err error) {
	if l.in.Add(1) > l.admit {
		l.in.Add(-1)
		return nil, fmt.Errorf("%w: %d requests decoding and %d waiting", ErrQueueFull, cap(l.slots), l.admit-int64(cap(l.slots)))
	}
	l.waiting.Add(1)
	select {
	case l.slots <- struct{}{}:
		l.waiting.Add(-1)
		return func() { <-l.slots; l.in.Add(-1) }, nil
	case <-ctx.Done():
		l.waiting.Add(-1)
		l.in.Add(-1)
		return nil, ctx.Err()
	}
}

// depth returns the requests waiting for a slot.
func (l *limiter) depth() int { return int(l.waiting.Load()) }

// setForm sets the length penalty's form ("power", "wu", or under
// OpenNMT-py's rules "none", "avg"; "": the rules' default).
func (job *Job) setForm(form string) {
	if job.Rules == translate.RulesOpenNMT {
		job.PenaltyWu, job.OnmtPenalty = false, form
		if form == "" || form == "power" {
			job.OnmtPenalty = "avg"
		}
		return
	}
	job.PenaltyWu, job.OnmtPenalty = form == "wu", ""
}
