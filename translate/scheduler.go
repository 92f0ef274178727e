package translate

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/attnx/attnx/decode"
)

// Scheduler translates the calls of many goroutines together: continuous
// batching. Their rows share one running decoder batch (a
// decode.Scheduler on the Translator's sessions): a call's rows join it at
// the next step boundary, finished rows leave at once, and a call returns
// as soon as its own rows are done. Results are those of the Translator's
// own calls: the same searches, the same Result fields. Make one with
// Translator.NewScheduler; it is safe for concurrent use.
type Scheduler struct {
	t *Translator
	s *decode.Scheduler
}

// CallOptions are the settings of one call (Scheduler's, or
// Translator.TranslateIDsCall); zero values mean the Translator's own.
type CallOptions struct {
	// MaxLen limits each output to this many tokens, EOS included; 0 means
	// the Translator's limit (Options.MaxLen, else 2n+10 for a source of n
	// tokens).
	MaxLen int
	// MaxLenCap, when above 0, bounds every row's output limit whatever
	// gives it (MaxLen, MaxLenA, MaxLenRatio, the model's own limit): a
	// server's largest output. OutputLimits reports the limit before it
	// and the setting that gives it (Limits.Want, Limits.By).
	MaxLenCap int
	// Beam, NBest and LengthPenalty are as in Options, for this call: 0
	// (nil) means the Translator's. A call that sets Beam lists one
	// hypothesis unless it sets NBest too. A beam of K takes K of the
	// scheduler's MaxSlots.
	Beam, NBest   int
	LengthPenalty *float64
	// LengthPenaltyWu (nil: the Translator's) ranks by score / ((5 +
	// len) / 6) ** alpha, as Options.LengthPenaltyWu.
	LengthPenaltyWu *bool
	// MinLen (0: the Translator's) keeps EOS out of the first MinLen
	// output tokens, as Options.MinLen.
	MinLen int
	// ReplaceUnk (nil: the Translator's) replaces unknown output tokens
	// with the source tokens they attend to most, as Options.ReplaceUnk;
	// the search then records attention even WithoutAttention (which
	// drops it from the results).
	ReplaceUnk *bool
	// Rules ("": the Translator's), OpenNMTPenalty ("": the Translator's,
	// else avg) and BanUNK (nil: the Translator's) are as in Options.
	Rules          string
	OpenNMTPenalty string
	BanUNK         *bool
	// NoRepeatNgram and RepetitionPenalty (nil: the Translator's) are as
	// in Options.
	NoRepeatNgram     *int
	RepetitionPenalty *float64
	// WithoutAttention leaves the results' attention empty and has the
	// search not record it: for a long output of a long source it is most
	// of a call's memory (T x src_len floats per hypothesis kept).
	WithoutAttention bool
	// The toolkits' other settings (nil: the Translator's), as in Options:
	// fairseq's UnkPenalty, Temperature and MaxLenA; OpenNMT-py's
	// MaxLenRatio, BlockNgram, IgnoreWhenBlocking (nil: the
	// Translator's), Ratio and the coverage penalty (CoveragePenalty,
	// Beta, StepwisePenalty); random sampling under either's rules;
	// fairseq's MatchSourceLen and diverse searches.
	UnkPenalty, Temperature, MaxLenA, MaxLenRatio *float64
	BlockNgram                                    *int
	IgnoreWhenBlocking                            []string
	Ratio                                         *float64
	CoveragePenalty                               *string
	Beta                                          *float64
	StepwisePenalty                               *bool
	Sampling                                      *bool
	SamplingTopK                                  *int
	SamplingTopP                                  *float64
	Seed                                          *uint64
	MatchSourceLen                                *bool
	DiverseBeamGroups                             *int
	DiverseBeamStrength, DiversityRate            *float64
	// AsTestSet gives each row, when MaxLen is 0, the output limit of the
	// batch the model's toolkit would put it in if the call's rows were
	// its test set (attnx.json's defaults.batching: JoeyNMT's and
	// OpenNMT-py's limits follow their batch's longest source), as
	// TranslateCorpus does; without it each row's limit follows its own
	// length. A server sets it so that a request's inputs decode as
	// `attnx translate --src` decodes the same lines.
	AsTestSet bool
	// Prefixes, when not nil, holds each source's target prefix (target
	// ids, EOS excluded; nil for none), indexed as the call's sources or
	// texts: the search forces it, its log-probs counted in the score,
	// and goes on from there (the package documentation's "Target
	// prefixes"). EncodePrefixes reads prefix texts.
	Prefixes [][]int64
}

// CheckCall checks a call's settings as TranslateIDsCall would, without
// decoding anything: for a server that answers a bad request before it
// takes its memory.
func (t *Translator) CheckCall(opt CallOptions) error {
	_, err := t.callSearchOptions(opt)
	return err
}

// testSetLens returns, for rows taken as a test set, the n of each row's
// output limit under the model's toolkit batching (nil when the model has
// none, or MaxLen decides).
func (t *Translator) testSetLens(rows [][]int64, opt CallOptions) []int {
	if !opt.AsTestSet || opt.MaxLen > 0 {
		return nil
	}
	return t.corpusLens(rows, CorpusOptions{})
}

// schedulerCells is the source positions per slot a Scheduler's executor
// reserves at first; it grows when longer sources join.
const schedulerCells = 32

// SchedulerConfig bounds a Scheduler (decode's, named here so that a
// caller needs no second import): MaxSlots rows decoded together,
// MaxQueue calls waiting to join; see NewScheduler for its zero value.
type SchedulerConfig = decode.SchedulerConfig

// SchedulerStats are a Scheduler's counters (decode's).
type SchedulerStats = decode.SchedulerStats

// DefaultMaxQueue is the calls a Scheduler lets wait for room in its
// batch when SchedulerConfig.MaxQueue is 0.
const DefaultMaxQueue = 256

// NewScheduler starts a Scheduler over t's sessions, bounded by cfg (rows
// decoded together, calls waiting): the zero SchedulerConfig takes
// MaxSlots from Options.BatchSize (else DefaultBatchSize) and MaxQueue
// DefaultMaxQueue. It needs the steps engine: the loop engine decodes a
// whole batch in one session run, which rows cannot join. Close the
// Scheduler when done; Translator.Close closes those still open.
func (t *Translator) NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	if err := t.errEnsemble("continuous batching (NewScheduler)"); err != nil {
		return nil, err
	}
	if t.pool == nil {
		return nil, fmt.Errorf("translate: continuous batching needs the %q engine; this Translator runs %q (open it with Engine %q)", EngineSteps, t.engine, EngineSteps)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	switch {
	case cfg.MaxSlots < 0:
		return nil, optionErrorf("MaxSlots", "translate: SchedulerConfig.MaxSlots = %d: want at least 1 (0: Options.BatchSize)", cfg.MaxSlots)
	case cfg.MaxQueue < 0:
		return nil, optionErrorf("MaxQueue", "translate: SchedulerConfig.MaxQueue = %d: want at least 1 (0: %d)", cfg.MaxQueue, DefaultMaxQueue)
	}
	if cfg.MaxSlots == 0 {
		cfg.MaxSlots = t.batchSize()
	}
	if cfg.MaxQueue == 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	ex, err := t.pool.m.NewExecutor(cfg.MaxSlots, cfg.MaxSlots*schedulerCells)
	if err != nil {
		return nil, fmt.Errorf("translate: %w", err)
	}
	ds, err := decode.NewScheduler(ex, cfg)
	if err != nil {
		ex.Close()
		return nil, fmt.Errorf("translate: %w", err)
	}
	s := &Scheduler{t: t, s: ds}
	if t.scheds == nil {
		t.scheds = map[*Scheduler]struct{}{}
	}
	t.scheds[s] = struct{}{}
	return s, nil
}

// Translate tokenises texts with the source vocabulary and translates
// them; see TranslateIDs. A blank text gets the zero Result, and an
// *InputError's Row counts among all the texts, as in
// Translator.Translate; each text's output limit follows its own length
// unless opt.AsTestSet.
func (s *Scheduler) Translate(ctx context.Context, texts []string, opt CallOptions) ([]Result, error) {
	return s.t.translateTexts(ctx, texts, func(src Sources) ([]Result, error) { return s.TranslateSources(ctx, src, opt) })
}

// TranslateIDs translates sources, one row of source token ids each, as
// Translator.TranslateIDs does, in the shared batch. Every row is checked
// before anything runs. It fails at once with an error wrapping
// ErrQueueFull when the scheduler's queue is full; when ctx ends
// first, the call's rows leave the batch at the next step boundary and it
// returns ctx.Err(). A copy-attention model's ids from the source
// vocabulary's size up are refused, as Translator.TranslateIDs refuses
// them.
func (s *Scheduler) TranslateIDs(ctx context.Context, sources [][]int64, opt CallOptions) ([]Result, error) {
	return s.TranslateSources(ctx, Sources{Rows: sources}, opt)
}

// TranslateSources is TranslateIDs with each row's own words outside the
// source vocabulary (Sources.Words), as Translator.TranslateSources.
func (s *Scheduler) TranslateSources(ctx context.Context, src Sources, opt CallOptions) ([]Result, error) {
	t := s.t
	so, err := t.callSearchOptions(opt)
	if err != nil {
		return nil, err
	}
	release, err := t.acquire(src)
	if err != nil {
		return nil, err
	}
	defer release()
	sources := src.Rows
	so.lens, so.words = t.testSetLens(sources, opt), src.Words
	if _, err := t.rowLimits(sources, so); err != nil {
		return nil, err
	}
	if err := t.checkCopySearch(so); err != nil {
		return nil, err
	}
	searches := t.prefixed(t.searches(sources, so), so)
	if err := s.s.Decode(ctx, t.encoderRows(sources), searches); err != nil {
		if errors.Is(err, decode.ErrSchedulerClosed) {
			return nil, schedulerClosed{}
		}
		return nil, err
	}
	res := searchResults(searches, so)
	for i := range res {
		t.finish(&res[i], sources[i], src.rowWords(i), so)
	}
	return res, nil
}

// QueueDepth returns the number of calls whose rows have not all joined
// the batch.
func (s *Scheduler) QueueDepth() int { return s.s.QueueDepth() }

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() SchedulerStats { return s.s.Stats() }

// Close waits for the calls in progress and releases the scheduler's
// decoding buffers; later calls fail with ErrClosed. Calling it again does
// nothing.
func (s *Scheduler) Close() {
	s.t.mu.Lock()
	delete(s.t.scheds, s)
	s.t.mu.Unlock()
	s.s.Close()
}

// TranslateCall tokenises texts with the source vocabulary and translates
// them; see TranslateIDsCall. A blank text gets the zero Result, as in
// Translate; each text's output limit follows its own length unless
// opt.AsTestSet (the package documentation's "Output limits").
func (t *Translator) TranslateCall(ctx context.Context, texts []string, opt CallOptions) ([]Result, error) {
	var err error
	if opt.Prefixes, err = keptPrefixes(texts, opt.Prefixes); err != nil {
		return nil, err
	}
	return t.translateTexts(ctx, texts, func(src Sources) ([]Result, error) { return t.TranslateSourcesCall(ctx, src, opt) })
}

// TranslateIDsCall translates sources as TranslateIDs does, alone (not in
// a Scheduler's shared batch), with opt's settings in place of the
// Translator's; on the steps engine only, unless opt sets nothing. Rows
// are decoded in batches of at most Options.BatchSize. A copy-attention
// model's ids from the source vocabulary's size up are refused, as
// TranslateIDs refuses them.
func (t *Translator) TranslateIDsCall(ctx context.Context, sources [][]int64, opt CallOptions) ([]Result, error) {
	return t.TranslateSourcesCall(ctx, Sources{Rows: sources}, opt)
}

// TranslateSourcesCall is TranslateIDsCall with each row's own words
// outside the source vocabulary (Sources.Words), as TranslateSources.
func (t *Translator) TranslateSourcesCall(ctx context.Context, src Sources, opt CallOptions) ([]Result, error) {
	sources := src.Rows
	// Without attention alone needs no per-call search on the loop
	// engine: its graph computes the attention anyway, which is dropped.
	search := opt
	search.WithoutAttention = false
	if search.AsTestSet && t.testSetLens(sources, opt) == nil {
		search.AsTestSet = false // changes nothing for this model
	}
	if reflect.ValueOf(search).IsZero() && (!opt.WithoutAttention || t.pool == nil) {
		res, err := t.TranslateSources(ctx, src)
		if err == nil && opt.WithoutAttention {
			for i := range res {
				res[i].Attention = nil
			}
		}
		return res, err
	}
	so, err := t.callSearchOptions(opt)
	if err != nil {
		return nil, err
	}
	if t.pool == nil {
		return nil, fmt.Errorf("translate: per-call settings need the %q engine; this Translator runs %q (open it with Engine %q)", EngineSteps, t.engine, EngineSteps)
	}
	so.lens = t.testSetLens(sources, opt)
	return t.decodeBatches(src, so, func(rows [][]int64, so searchOpts) ([]Result, error) { return t.runSearch(ctx, rows, so) })
}
