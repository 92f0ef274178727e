package translate

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
)

// runSearch decodes one batch on the decoding core, as so says.
func (t *Translator) runSearch(ctx context.Context, rows [][]int64, so searchOpts) ([]Result, error) {
	if err := t.checkCopySearch(so); err != nil {
		return nil, err
	}
	if err := t.checkEnsembleSearch(so); err != nil {
		return nil, err
	}
	searches := t.prefixed(t.searches(rows, so), so)
	if err := t.decodeSteps(ctx, t.encoderRows(rows), so.beam, searches); err != nil {
		return nil, err
	}
	return searchResults(searches, so), nil
}

// searchOpts is how the rows of a call are searched.
type searchOpts struct {
	maxLen int     // output limit; 0: the Translator's (Options.MaxLen, else 2n+10)
	beam   int     // 1: greedy decoding; K > 1: beam search of width K
	nBest  int     // hypotheses listed per row (beam search)
	alpha  float64 // beam search's length penalty
	// noAttention: the results carry no attention (CallOptions.WithoutAttention);
	// the searches record none unless replaceUnk needs it.
	noAttention bool
	// rules are the decoding rules (attnx.json's, with MinLen's), wu the
	// length penalty's form, replaceUnk Options.ReplaceUnk's.
	rules      *attention.Rules
	wu         bool
	replaceUnk bool
	// openNMT: OpenNMT-py's beam search (Options.Rules), with its penalty
	// and -ban_unk_token; onmt2: the model's OpenNMT-py rules are 2.x's
	// (onmtV2), whose penalties take alpha otherwise (onmtAlpha).
	openNMT bool
	onmt2   bool
	onmtPen string
	banUNK  bool
	// joey: JoeyNMT's beam search (Options.Rules RulesJoeyNMT).
	joey bool
	// fairseq: fairseq's SequenceGenerator (Options.Rules RulesFairseq),
	// with unkPen its --unkpen.
	fairseq bool
	unkPen  float64
	temp    float64
	// noRepeat and repPenalty are Options.NoRepeatNgram and
	// RepetitionPenalty, or the call's.
	noRepeat   int
	repPenalty float64
	// The toolkits' other settings: Options' or the call's.
	blockNgram     int
	covPen         string
	beta           float64
	stepwise       bool
	ignoreBlocking []int64
	ratio          float64
	sampling       bool
	topK           int
	topP           float64
	seed           uint64
	// fairseq's other searches: Options.MatchSourceLen, DiverseBeamGroups,
	// DiverseBeamStrength, DiversityRate, or the call's.
	matchSrc      bool
	groups        int
	groupStrength *float64
	divRate       *float64
	maxLenA       float64
	maxLenRatio   *float64
	// maxLenCap, above 0, bounds every row's limit (CallOptions.MaxLenCap).
	maxLenCap int
	// lens, when not nil, holds the n of each row's output limit: the
	// longest source of the toolkit batch the row is in
	// (modeldir.Defaults.Batching), in place of the row's own length.
	lens []int
	// words, when not nil, are each row's own words outside the source
	// vocabulary (Sources.Words), for a copy model's dynamic vocabulary.
	words [][]string
	// prefixes, when not nil, are each row's target prefix
	// (CallOptions.Prefixes).
	prefixes [][]int64
}

// rowWords returns row r's words outside the source vocabulary.
func (so searchOpts) rowWords(r int) []string {
	if r < len(so.words) {
		return so.words[r]
	}
	return nil
}

// rowLimit is the output limit of row r (source row): its Limits' Max.
func (t *Translator) rowLimit(so searchOpts, r int, row []int64) int {
	return t.rowLimitsOf(so, r, row).Max
}

// searchOptions returns the Translator's own search settings.
func (t *Translator) searchOptions() searchOpts {
	so := searchOpts{beam: t.beam(), nBest: t.nBest(), alpha: t.lengthPenalty(), rules: t.rules, wu: t.opt.LengthPenaltyWu, replaceUnk: t.opt.ReplaceUnk,
		openNMT: t.opt.Rules == RulesOpenNMT, onmtPen: t.opt.OpenNMTPenalty, banUNK: t.opt.BanUNK, joey: t.opt.Rules == RulesJoeyNMT,
		fairseq: t.opt.Rules == RulesFairseq, unkPen: t.opt.UnkPenalty, temp: t.opt.Temperature, noRepeat: t.opt.NoRepeatNgram, repPenalty: t.opt.RepetitionPenalty,
		blockNgram: t.opt.BlockNgram, ignoreBlocking: t.ignoreBlocking, ratio: t.opt.Ratio, covPen: t.opt.CoveragePenalty, beta: t.opt.Beta, stepwise: t.opt.StepwisePenalty, sampling: t.opt.Sampling, topK: t.opt.SamplingTopK,
		topP: t.opt.SamplingTopP, seed: t.opt.Seed, maxLenA: t.opt.MaxLenA, maxLenRatio: t.opt.MaxLenRatio,
		matchSrc: t.opt.MatchSourceLen, groups: t.opt.DiverseBeamGroups, groupStrength: t.opt.DiverseBeamStrength, divRate: t.opt.DiversityRate}
	if so.onmtPen == "" {
		so.onmtPen = decode.PenaltyAvg
	}
	so.onmt2 = t.onmtV2()
	return so
}

// onmtAlpha is the alpha of OpenNMT-py's searches: so.alpha as the
// model's release computes -length_penalty with it (decode.OpenNMTAlpha:
// 2.x's avg divides by the length, whatever -alpha is).
func (so searchOpts) onmtAlpha() float64 {
	return decode.OpenNMTAlpha(so.onmtPen, so.alpha, so.openNMT && so.onmt2)
}

// callSearchOptions returns the search settings of a call: opt's where it
// sets them, else the Translator's. A call that sets Beam lists one
// hypothesis unless it sets NBest too.
func (t *Translator) callSearchOptions(opt CallOptions) (searchOpts, error) {
	if opt.MaxLen < 0 {
		return searchOpts{}, optionErrorf("MaxLen", "translate: CallOptions.MaxLen = %d: must not be negative", opt.MaxLen)
	}
	if opt.MaxLenCap < 0 {
		return searchOpts{}, optionErrorf("MaxLenCap", "translate: CallOptions.MaxLenCap = %d: must not be negative", opt.MaxLenCap)
	}
	so := t.searchOptions()
	so.maxLen, so.maxLenCap = opt.MaxLen, opt.MaxLenCap
	so.noAttention, so.prefixes = opt.WithoutAttention, opt.Prefixes
	if opt.Beam != 0 {
		so.beam, so.nBest = opt.Beam, 1
	}
	if opt.NBest != 0 {
		so.nBest = opt.NBest
	}
	if opt.LengthPenalty != nil {
		so.alpha = *opt.LengthPenalty
	}
	if opt.LengthPenaltyWu != nil {
		so.wu = *opt.LengthPenaltyWu
	}
	if opt.ReplaceUnk != nil {
		if *opt.ReplaceUnk && t.tgtUNK < 0 {
			return searchOpts{}, optionErrorf("ReplaceUnk", "translate: CallOptions.ReplaceUnk: %s has no unknown token in both vocabularies", filepath.Join(t.dir, "attnx.json"))
		}
		so.replaceUnk = *opt.ReplaceUnk
	}
	switch opt.Rules {
	case "":
	case RulesSpec, RulesOpenNMT, RulesJoeyNMT, RulesFairseq:
		so.openNMT, so.joey, so.fairseq = opt.Rules == RulesOpenNMT, opt.Rules == RulesJoeyNMT, opt.Rules == RulesFairseq
	default:
		return searchOpts{}, optionErrorf("Rules", "translate: CallOptions.Rules %q: want %s", opt.Rules, rulesList)
	}
	switch p := opt.OpenNMTPenalty; p {
	case "":
	case decode.PenaltyNone, decode.PenaltyAvg, decode.PenaltyWu:
		so.onmtPen = p
	default:
		return searchOpts{}, optionErrorf("OpenNMTPenalty", "translate: CallOptions.OpenNMTPenalty %q: want none, avg or wu", p)
	}
	if opt.BanUNK != nil {
		so.banUNK = *opt.BanUNK
	}
	if opt.NoRepeatNgram != nil {
		so.noRepeat = *opt.NoRepeatNgram
	}
	if opt.RepetitionPenalty != nil {
		so.repPenalty = *opt.RepetitionPenalty
	}
	if so.fairseq && (so.noRepeat >= 2 || so.repPenalty > 1) {
		return searchOpts{}, optionError("NoRepeatNgram", errFairseqRepeats)
	}
	if err := t.callToolkitOptions(opt, &so); err != nil {
		return searchOpts{}, err
	}
	switch {
	case opt.MinLen < 0:
		return searchOpts{}, optionErrorf("MinLen", "translate: CallOptions.MinLen = %d: must not be negative", opt.MinLen)
	case opt.MinLen > 0 && opt.MaxLen > 0 && opt.MinLen >= opt.MaxLen:
		return searchOpts{}, optionErrorf("MinLen", "translate: CallOptions.MinLen %d must be below MaxLen %d (EOS counts in MaxLen)", opt.MinLen, opt.MaxLen)
	}
	// The rules: the call's MinLen, else the Translator's, and under
	// attnx's rules the unknown token banned.
	var err error
	if so.rules, err = t.stepRules(cmp.Or(opt.MinLen, t.opt.MinLen), so.banUNK && !so.openNMT); err != nil {
		return searchOpts{}, optionErrorf("BanUNK", "translate: CallOptions.BanUNK: %w", err)
	}
	if err := checkBeamOptions(Options{Beam: so.beam, NBest: so.nBest, LengthPenalty: &so.alpha}); err != nil {
		return searchOpts{}, err
	}
	so.beam, so.nBest = max(so.beam, 1), max(so.nBest, 1)
	if err := t.checkCopySearch(so); err != nil {
		return searchOpts{}, err
	}
	return so, nil
}

// rulesName is the name of so's rules (Options.Rules).
func (so searchOpts) rulesName() string {
	switch {
	case so.openNMT:
		return RulesOpenNMT
	case so.joey:
		return RulesJoeyNMT
	case so.fairseq:
		return RulesFairseq
	}
	return RulesSpec
}

// keepAttention: the searches record attention for the results or for
// replacing unknown tokens.
func (so searchOpts) keepAttention() bool { return !so.noAttention || so.replaceUnk }

// tgtSpecials are the target's special tokens: <unk>, <pad>, <s>, </s>
// (those it has).
func (t *Translator) tgtSpecials() []int64 {
	var ids []int64
	for _, id := range []int64{t.tgtUNK, t.info.Special.PAD, t.info.Special.SOS, t.info.Special.EOS} {
		if id >= 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// stepRules are the decoding rules the steps engine applies: attnx.json's,
// with EOS kept out of the first minLen output tokens and, with ban, the
// unknown token banned. The error says the model has no unknown token to
// ban.
func (t *Translator) stepRules(minLen int, ban bool) (*attention.Rules, error) {
	rules := t.info.Decoding
	if minLen > 0 {
		rules = withMinLen(rules, minLen)
	}
	if ban {
		if t.tgtUNK < 0 {
			return nil, fmt.Errorf("%s has no unknown token in both vocabularies", filepath.Join(t.dir, "attnx.json"))
		}
		rules = withBanned(rules, t.tgtUNK)
	}
	return rules, nil
}

// withBanned returns rules (nil: none) with id banned from greedy and beam
// search.
func withBanned(rules *attention.Rules, id int64) *attention.Rules {
	r := attention.Rules{Origin: "BanUNK"}
	if rules != nil {
		r = *rules
	}
	r.Greedy = append(slices.Clip(r.Greedy), id)
	r.Beam = append(slices.Clip(r.Beam), id)
	return &r
}

// withMinLen returns rules (nil: none) with EOS kept out of the first
// minLen output tokens.
func withMinLen(rules *attention.Rules, minLen int) *attention.Rules {
	r := attention.Rules{Origin: "MinLen"}
	if rules != nil {
		r = *rules
	}
	r.EOSFromStep = max(r.EOSFromStep, minLen)
	return &r
}

// searches returns one search per row, as so says.
func (t *Translator) searches(rows [][]int64, so searchOpts) []decode.Search {
	sp := t.info.Special
	ss := make([]decode.Search, len(rows))
	// OpenNMT-py's GreedySearch bans and blocks tokens as its BeamSearch
	// does; its picks are a beam of one's.
	if so.openNMT && so.sampling {
		ss := make([]decode.OpenNMTSample, len(rows))
		out := make([]decode.Search, len(rows))
		for r, row := range rows {
			ss[r] = decode.OpenNMTSample{SOS: sp.SOS, EOS: sp.EOS, UNK: t.tgtUNK, K: so.beam, NBest: so.nBest, MaxLen: t.rowLimit(so, r, row),
				Penalty: so.onmtPen, Alpha: so.onmtAlpha(), BanUNK: so.banUNK, BlockNgram: so.blockNgram, IgnoreWhenBlocking: so.ignoreBlocking,
				Temp: cmp.Or(so.temp, 1), TopK: so.topK, TopP: so.topP, Rand: rowRand(so.seed, row),
				KeepAttention: so.keepAttention(), Rules: so.rules, Copy: t.copyMap(row, so.rowWords(r))}
			out[r] = &ss[r]
		}
		return out
	}
	onmtGreedy := so.openNMT && (so.banUNK || so.blockNgram > 0)
	if so.beam > 1 && so.openNMT || so.beam == 1 && onmtGreedy {
		bs := make([]decode.OpenNMTBeam, len(rows))
		for r, row := range rows {
			bs[r] = decode.OpenNMTBeam{SOS: sp.SOS, EOS: sp.EOS, UNK: sp.UNK, K: so.beam, NBest: so.nBest, MaxLen: t.rowLimit(so, r, row),
				Penalty: so.onmtPen, Alpha: so.onmtAlpha(), BanUNK: so.banUNK, KeepAttention: so.keepAttention(), Rules: so.rules,
				BlockNgram: so.blockNgram, IgnoreWhenBlocking: so.ignoreBlocking, Ratio: so.ratio, SrcLen: len(row), Copy: t.copyMap(row, so.rowWords(r)),
				V2: so.openNMT && t.onmtV2(), CoveragePenalty: so.covPen, Beta: so.beta, Stepwise: so.stepwise}
			ss[r] = &bs[r]
		}
		return ss
	}
	if so.fairseq {
		bs := make([]decode.FairseqBeam, len(rows))
		for r, row := range rows {
			bs[r] = decode.FairseqBeam{SOS: sp.SOS, EOS: sp.EOS, UNK: t.tgtUNK, K: so.beam, NBest: so.nBest, MaxLen: t.rowLimit(so, r, row),
				LenPen: so.alpha, UnkPen: so.unkPen, Temperature: so.temp, KeepAttention: so.keepAttention(), Rules: so.rules}
			if so.sampling {
				bs[r].Sampling, bs[r].TopK, bs[r].TopP, bs[r].Rand = true, so.topK, so.topP, rowRand(so.seed, row)
			}
			so.setDiverse(&bs[r], rows, row, sp)
			ss[r] = &bs[r]
		}
		return ss
	}
	var repeats func(row []int64) *decode.Repeats
	if so.noRepeat >= 2 || so.repPenalty > 1 {
		repeats = func(row []int64) *decode.Repeats {
			return &decode.Repeats{NoRepeatNgram: so.noRepeat, Penalty: so.repPenalty, Src: row, Specials: t.tgtSpecials()}
		}
	}
	if so.beam > 1 && so.joey {
		bs := make([]decode.JoeyBeam, len(rows))
		for r, row := range rows {
			bs[r] = decode.JoeyBeam{SOS: sp.SOS, EOS: sp.EOS, UNK: max(t.tgtUNK, 0), K: so.beam, NBest: so.nBest, MaxLen: t.rowLimit(so, r, row),
				Alpha: so.alpha, KeepAttention: so.keepAttention(), Rules: so.rules}
			if repeats != nil {
				bs[r].Repeats = repeats(row)
			}
			ss[r] = &bs[r]
		}
		return ss
	}
	if so.beam > 1 {
		bs := make([]decode.Beam, len(rows))
		for r, row := range rows {
			bs[r] = decode.Beam{SOS: sp.SOS, EOS: sp.EOS, K: so.beam, MaxLen: t.rowLimit(so, r, row), LengthPenalty: so.alpha, PenaltyWu: so.wu, KeepAttention: so.keepAttention(), Rules: so.rules}
			if repeats != nil {
				bs[r].Repeats = repeats(row)
			}
			ss[r] = &bs[r]
		}
		return ss
	}
	gs := make([]decode.Greedy, len(rows))
	for r, row := range rows {
		gs[r] = decode.Greedy{SOS: sp.SOS, EOS: sp.EOS, MaxLen: t.rowLimit(so, r, row), KeepAttention: so.keepAttention(), Rules: so.rules, Copy: t.copyMap(row, so.rowWords(r))}
		ss[r] = &gs[r]
	}
	return ss
}

// onmtV2 reports whether the model's OpenNMT-py rules are 2.x's
// (attnx.json's rules_version 2).
func (t *Translator) onmtV2() bool {
	d := t.info.Defaults
	return d != nil && d.Rules == RulesOpenNMT && d.RulesVersion == 2
}

// checkCopySearch refuses, for a copy-attention model, the searches that
// do not decode over a sentence's dynamic vocabulary: attnx's own and
// JoeyNMT's beam searches, and fairseq's searches. OpenNMT-py's searches
// and greedy decoding under attnx's or JoeyNMT's rules do. The refusal
// names the settings (Rules, Beam, Sampling), so that each surface words
// it with its own names (OptionNames) as a bad setting of the caller's.
func (t *Translator) checkCopySearch(so searchOpts) error {
	if !t.copy || so.openNMT || so.beam == 1 && !so.fairseq && !so.sampling {
		return nil
	}
	e := &CopySearchError{Info: filepath.Join(t.dir, "attnx.json"), Rules: so.rulesName(), Sampling: so.sampling}
	if so.beam > 1 && !so.fairseq && !so.sampling {
		e.Beam = so.beam
	}
	return e
}

// CopySearchError refuses a search that a copy-attention model cannot
// decode with (it decodes over each sentence's dynamic vocabulary with
// OpenNMT-py's searches, or greedily under attnx's or JoeyNMT's rules): a
// setting of the caller's, named by its Options fields, which a surface
// renames with OptionNames.
type CopySearchError struct {
	// Info is the model's attnx.json.
	Info string
	// Rules are the rules asked for; Beam is the beam width that made
	// them refused (0 when the rules are refused whatever the beam), and
	// Sampling whether sampling did.
	Rules    string
	Beam     int
	Sampling bool
}

// Error names the settings in this package's terms.
func (e *CopySearchError) Error() string {
	what := fmt.Sprintf("Rules %q", e.Rules)
	switch {
	case e.Sampling:
		what += " with Sampling"
	case e.Beam > 1:
		what += fmt.Sprintf(" with Beam %d", e.Beam)
	}
	return fmt.Sprintf("translate: %s: %s has copy attention, which decodes over each sentence's dynamic vocabulary with OpenNMT-py's searches (Rules %q) or greedily under Rules %q or %q only",
		what, e.Info, RulesOpenNMT, RulesSpec, RulesJoeyNMT)
}

// rowRand is a row's random number generator for sampling: seeded by
// seed and the row's source tokens, so that a sentence draws the same
// samples whatever batch it is in.
func rowRand(seed uint64, row []int64) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	for _, id := range row {
		binary.LittleEndian.PutUint64(b[:], uint64(id))
		h.Write(b[:])
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// nBestSearch is a beam search's results: decode.Beam's and
// decode.OpenNMTBeam's.
type nBestSearch interface {
	Hypotheses(n int) []decode.Hypothesis
	Attention(i int) [][]float32
}

// searchResults reads the results of finished searches made by searches;
// a beam search lists its nBest best hypotheses, and the result's tokens
// and attention are the first one's.
func searchResults(ss []decode.Search, so searchOpts) []Result {
	res := make([]Result, len(ss))
	for r, s := range ss {
		switch s := unprefixed(s).(type) {
		case *decode.Greedy:
			res[r].Tokens, res[r].Attention = s.Tokens(), s.Attention()
			res[r].Hypotheses = []Hypothesis{greedyHypothesis(so, res[r].Tokens, slices.Clone(s.Scores()))}
		case nBestSearch:
			for k, h := range s.Hypotheses(so.nBest) {
				hyp := Hypothesis{Tokens: h.Tokens, Score: h.Score, NormalizedScore: h.NormalizedScore, PositionalScores: h.Positional}
				if so.keepAttention() {
					hyp.Attention = s.Attention(k) // finish drops it WithoutAttention
				}
				res[r].Hypotheses = append(res[r].Hypotheses, hyp)
			}
			if len(res[r].Hypotheses) > 0 {
				res[r].Tokens, res[r].Attention = res[r].Hypotheses[0].Tokens, s.Attention(0)
			}
		}
	}
	return res
}

// greedyHypothesis is a greedy row's one hypothesis: tokens, each one's
// log-prob (natural log, after the rules), Score their float32 sum and
// NormalizedScore the score the rules' toolkit gives its greedy search:
// under OpenNMT-py's, onmt_translate -beam_size 1's (a BeamSearch of one:
// decode.OpenNMTScores, with -length_penalty and -alpha); under
// JoeyNMT's, the sum (its greedy search reports token scores, with no
// length penalty); else the spec's beam of one's, Score / len ** alpha
// (decode.Normalize, with LengthPenaltyWu's form).
func greedyHypothesis(so searchOpts, tokens []int64, logProbs []float32) Hypothesis {
	h := Hypothesis{Tokens: tokens, PositionalScores: logProbs}
	for _, x := range logProbs {
		h.Score += x
	}
	switch {
	case so.openNMT:
		h.Score, h.NormalizedScore = decode.OpenNMTScores(so.onmtPen, so.onmtAlpha(), logProbs)
	case so.joey:
		h.NormalizedScore = h.Score
	default:
		h.NormalizedScore = decode.Normalize(h.Score, len(tokens), so.alpha, so.wu)
	}
	return h
}

// decodeSteps decodes rows with their searches on an executor from the
// pool, sized for width slots per row.
func (t *Translator) decodeSteps(ctx context.Context, rows [][]int64, width int, searches []decode.Search) error {
	if t.ens != nil {
		return t.decodeEnsemble(ctx, rows, width, searches)
	}
	ex, err := t.pool.get(ctx, width*len(rows), width*len(rows)*maxLen(rows))
	if err != nil {
		return err
	}
	err = decode.Decode(ctx, ex, rows, searches)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// Do not keep buffers ONNX Runtime has complained about.
		t.pool.discard(ex)
		return err
	}
	t.pool.put(ex)
	return err
}

// callToolkitOptions sets the toolkits' other settings of a call (those
// it gives) in so, and checks them with the rules they go with as Open
// checks Options (checkOptions: one validation for both).
func (t *Translator) callToolkitOptions(opt CallOptions, so *searchOpts) error {
	set := func(p *float64, v *float64) {
		if v != nil {
			*p = *v
		}
	}
	set(&so.unkPen, opt.UnkPenalty)
	set(&so.temp, opt.Temperature)
	set(&so.maxLenA, opt.MaxLenA)
	set(&so.ratio, opt.Ratio)
	set(&so.beta, opt.Beta)
	if opt.CoveragePenalty != nil {
		so.covPen = *opt.CoveragePenalty
	}
	if opt.StepwisePenalty != nil {
		so.stepwise = *opt.StepwisePenalty
	}
	set(&so.topP, opt.SamplingTopP)
	if opt.MaxLenRatio != nil {
		r := *opt.MaxLenRatio
		so.maxLenRatio = &r
	}
	if opt.BlockNgram != nil {
		so.blockNgram = *opt.BlockNgram
	}
	if opt.Sampling != nil {
		so.sampling = *opt.Sampling
	}
	if opt.SamplingTopK != nil {
		so.topK = *opt.SamplingTopK
	}
	if opt.Seed != nil {
		so.seed = *opt.Seed
	}
	callDiverse(opt, so)
	if opt.IgnoreWhenBlocking != nil {
		ids, err := t.targetIDs("IgnoreWhenBlocking", opt.IgnoreWhenBlocking)
		if err != nil {
			return err
		}
		so.ignoreBlocking = ids
	}
	return checkOptions(Options{Engine: EngineSteps, Rules: so.rulesName(), Beam: so.beam, NBest: so.nBest, UnkPenalty: so.unkPen, Temperature: so.temp,
		MaxLenA: so.maxLenA, MaxLenRatio: so.maxLenRatio, BlockNgram: so.blockNgram, IgnoreWhenBlocking: opt.IgnoreWhenBlocking, Ratio: so.ratio,
		CoveragePenalty: so.covPen, Beta: so.beta, StepwisePenalty: so.stepwise,
		Sampling: so.sampling, SamplingTopK: so.topK, SamplingTopP: so.topP, NoRepeatNgram: so.noRepeat, RepetitionPenalty: so.repPenalty, LengthPenaltyWu: so.wu,
		MatchSourceLen: so.matchSrc, DiverseBeamGroups: so.groups, DiverseBeamStrength: so.groupStrength, DiversityRate: so.divRate})
}
