package translate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
)

// Engine names accepted in Options.Engine.
const (
	EngineSteps = "steps"
	EngineLoop  = "loop"
)

// Names of greedy.onnx's own input and outputs (the interface of
// attention.Greedy).
const (
	inMaxLen     = "max_len"
	outOutputIDs = "output_ids"
	outGreedyAtt = "attention"
)

// DefaultBatchSize is the largest number of rows run together when
// Options.BatchSize is 0; longer calls are split.
const DefaultBatchSize = 64

// Options configures a Translator. The zero value decodes as the model's
// toolkit does (its search, beam width, length penalty and output limits,
// from attnx.json's defaults: ResolveDecoding), on the CPU with attnx's
// native evaluator and its default threads, on the loop engine when the
// search is greedy and greedy.onnx is present (else steps).
type Options struct {
	// Backend is what runs the graphs: "go" (attnx's native evaluator, no
	// cgo and no shared library; CPU only) or "ort" (ONNX Runtime); "" is
	// onnxrun.BackendFor's choice: ONNX Runtime for Device "cuda" (in a
	// build with cgo), else the native evaluator (onnxrun.DefaultBackend).
	Backend string
	// Threads is the intra-op thread count (the native evaluator's
	// goroutines per product, or ONNX Runtime's); 0 is the backend's
	// default.
	Threads int
	// Device is "cpu" (or ""), "cuda" or "auto" (CUDA, else CPU).
	Device string
	// OptLevel is ONNX Runtime's graph optimisation level.
	OptLevel onnxrun.OptLevel
	// ORTLibrary is the ONNX Runtime shared library to load when Backend
	// is "ort" (or Device needs it); "" searches as onnxrun.Options'
	// ORTLibrary documents ($ATTNX_ORT_LIB, beside the executable, the
	// dynamic loader, the system's directories). A process loads one
	// library: every Translator must name the same file, or none.
	ORTLibrary string
	// Engine is "steps", "loop", or "" for loop when the model directory
	// has greedy.onnx and steps otherwise.
	Engine string
	// MaxLen limits the output of each row to this many tokens (EOS
	// included). 0 means the model's limit (attnx.json's defaults), else
	// 2*n+10 for a source of n tokens.
	MaxLen int
	// MaxLenRatio, when set, is OpenNMT-py's -max_length_ratio: the limit
	// becomes min(MaxLen, int(ratio x n + 5)), MaxLen 0 meaning
	// -max_length's default 250, with n the longest source of the row's
	// toolkit batch (attnx.json's defaults.batching) or the row's own
	// length; ratio 0 leaves MaxLen (or 250) alone.
	MaxLenRatio *float64
	// MaxLenA is fairseq's --max-len-a under RulesFairseq: a row of n
	// source tokens (</s> included) holds at most int(MaxLenA x n + b) + 1
	// tokens, b being MaxLen - 1 (fairseq's --max-len-b; MaxLen 0: 200),
	// at most 1024 (fairseq's LSTM's max_target_positions); n is the
	// row's own length, as fairseq-interactive translates one sentence at
	// a time by default.
	MaxLenA float64
	// ReplaceUnk replaces each unknown token of the output (the target
	// vocabulary's token spelled like the source's UNK) with the source
	// token that has the highest attention at that step (OpenNMT-py's
	// -replace_unk), in OutputTokens and Text.
	ReplaceUnk bool
	// ReplaceUnkDict, when ReplaceUnk (or CallOptions.ReplaceUnk) is on,
	// writes its entry for that source token instead where it has one
	// (fairseq's --replace-unk DICT, OpenNMT-py's -phrase_table; see
	// LoadAlignDict and LoadPhraseTable).
	ReplaceUnkDict UnkDict
	// MinLen keeps EOS out of the first MinLen output tokens, greedy and
	// beam search alike (OpenNMT-py's -min_length, JoeyNMT's
	// min_output_length). It runs on the steps engine: the loop engine's
	// graphs have their rules built in.
	MinLen int
	// PerSentenceLimits gives each text of Translate the output limit of
	// its own length, where by default it gets the one the model's toolkit
	// gives it in a file of the call's texts (for a model whose toolkit
	// limits a sentence by the longest source of its batch, attnx.json's
	// defaults.batching): a text then translates the same alone or beside
	// any others, which the toolkit's own output need not. See "Output
	// limits" in the package documentation.
	PerSentenceLimits bool
	// MaxSourceLen rejects sources longer than this many tokens; 0 means
	// no limit.
	MaxSourceLen int
	// BatchSize is the largest number of rows decoded in one run; longer
	// calls are split. 0 means DefaultBatchSize.
	BatchSize int
	// UnknownToUNK makes Translate map characters or words outside the
	// source vocabulary to the UNK token instead of failing.
	UnknownToUNK bool
	// Pretokenized takes input text as the model's source pieces already,
	// separated by white space (a test set segmented by prepare-*.sh or
	// spm_encode, as fairseq-interactive without --bpe or onmt_translate
	// without transforms reads it): the model's tokenizer is not run, and
	// pieces outside the vocabulary become its unknown token. The output
	// is joined into text as always.
	Pretokenized bool
	// NoModelDefaults takes the decoding settings below as they are: the
	// model's defaults (attnx.json's, its toolkit's) are not applied to
	// the ones left zero. Without it, zero Options decode as the model's
	// toolkit does (ResolveDecoding): for a caller that resolved them
	// itself, or that wants attnx's own rules whatever the model says.
	NoModelDefaults bool
	// MaxIdleBytes caps the memory of the steps engine's idle decoding
	// buffers, kept for later calls; 0 means DefaultMaxIdleBytes.
	MaxIdleBytes int64
	// Beam is the beam width K (spec "Beam search"): 1 decodes greedily,
	// K > 1 keeps K hypotheses per input, and 0 takes the model's default
	// (attnx.json's defaults: 5 for OpenNMT-py's and fairseq's translate
	// commands, JoeyNMT's config), greedy for a model without one or with
	// NoModelDefaults. Beam search runs on the
	// steps engine (the default for K > 1) or, with Engine "loop", on
	// beam.onnx (attnx export --beam), which gives the same hypotheses.
	Beam int
	// NBest is how many hypotheses each Result lists (Result.Hypotheses),
	// 1 <= NBest <= Beam; 0 means 1.
	NBest int
	// LengthPenalty is alpha of beam search's normalised score
	// score / len ** alpha (finite, >= 0); nil means DefaultLengthPenalty.
	// Greedy decoding chooses without it, and normalises its result's
	// score with it as a beam of one would.
	LengthPenalty *float64
	// LengthPenaltyWu ranks beam search's hypotheses by score / ((5 + len)
	// / 6) ** alpha (Wu et al.; OpenNMT-py's -length_penalty wu, JoeyNMT's
	// beam_alpha) instead of score / len ** alpha. Steps engine only:
	// beam.onnx has the spec's penalty built in.
	LengthPenaltyWu bool
	// Rules chooses beam search's rules: "" or RulesSpec, the spec's (K
	// live hypotheses until K have finished, ranked by LengthPenalty's
	// normalisation); RulesOpenNMT, OpenNMT-py's BeamSearch as
	// onmt_translate runs it (decode.OpenNMTBeam): OpenNMTPenalty is its
	// -length_penalty (none, avg or wu; "" means avg), LengthPenalty its
	// -alpha, BanUNK its -ban_unk_token, and without MaxLen a row's limit
	// is OpenNMT-py's min(250, 1.25 n + 5) for n source tokens. Steps
	// engine only.
	Rules          string
	OpenNMTPenalty string
	// BanUNK: the output never holds the unknown token: OpenNMT-py's
	// -ban_unk_token under RulesOpenNMT, JoeyNMT's generate_unk: false
	// otherwise (steps engine).
	BanUNK bool
	// BlockNgram is OpenNMT-py's -block_ngram_repeat under RulesOpenNMT
	// (no hypothesis repeats an n-gram of this many tokens), except for
	// n-grams holding one of the target tokens IgnoreWhenBlocking
	// (-ignore_when_blocking).
	BlockNgram         int
	IgnoreWhenBlocking []string
	// NoRepeatNgram and RepetitionPenalty are JoeyNMT's
	// no_repeat_ngram_size and repetition_penalty for beam search under
	// attnx's rules (decode.Repeats): no hypothesis completes an n-gram of
	// its own or of its source, and tokens it or the source holds are
	// penalised (> 1 to act). Like JoeyNMT, greedy decoding ignores them.
	NoRepeatNgram     int
	RepetitionPenalty float64
	// Ratio is OpenNMT-py's -ratio under RulesOpenNMT (0: off): a row's
	// search may stop before its best candidate ends, once that
	// candidate's score over Ratio x the source's length is no better than
	// the best finished score per token (decode.OpenNMTBeam.Ratio).
	Ratio float64
	// CoveragePenalty is OpenNMT-py's -coverage_penalty under RulesOpenNMT
	// ("" or "none", "wu", "summary"), Beta its -beta and StepwisePenalty
	// its -stepwise_penalty (decode.OpenNMTBeam.CoveragePenalty).
	CoveragePenalty string
	Beta            float64
	StepwisePenalty bool
	// UnkPenalty is fairseq's --unkpen under RulesFairseq: subtracted
	// from the unknown token's log-prob at every step.
	UnkPenalty float64
	// Temperature is fairseq's --temperature under RulesFairseq: each
	// step's log-probs are those of the logits divided by it (0: none).
	Temperature float64
	// Sampling is fairseq's --sampling under RulesFairseq: each of the
	// Beam hypotheses draws its tokens, from the SamplingTopK or
	// SamplingTopP most probable when set (--sampling-topk,
	// --sampling-topp), with a generator seeded by Seed and the row's
	// source, so that an input gives the same samples in any batch. Under
	// RulesOpenNMT it is onmt_translate's random sampling
	// (decode.OpenNMTSample: -random_sampling_topk, -random_sampling_topp,
	// with Temperature its -random_sampling_temp, 0 meaning its default
	// 1). The draws are attnx's own: the toolkits' come from torch's
	// generator.
	Sampling     bool
	SamplingTopK int
	SamplingTopP float64
	Seed         uint64
	// fairseq's other searches under RulesFairseq, at most one of them
	// and none with Sampling (decode/diverse.go): MatchSourceLen is its
	// --match-source-len (each output as long as its source, the limit
	// the longest source of the call's batch); DiverseBeamGroups its
	// --diverse-beam-groups (0: none; it divides Beam), with
	// DiverseBeamStrength its --diverse-beam-strength (nil: fairseq's
	// 0.5); DiversityRate its --diversity-rate (nil: none; 0 searches as
	// the beam does).
	MatchSourceLen      bool
	DiverseBeamGroups   int
	DiverseBeamStrength *float64
	DiversityRate       *float64
	// MaxLiveBytes bounds the decoding buffers of the steps engine's calls
	// in progress, all together: a call whose batch would go over waits for
	// others to finish (or for its context to end), and a batch that alone
	// needs more is refused with an error naming this limit. 0 means
	// DefaultMaxLiveBytes. ONNX Runtime's own working memory comes on top.
	MaxLiveBytes int64
}

// errFairseqRepeats refuses JoeyNMT's repetition rules under fairseq's:
// they are not fairseq's --no-repeat-ngram-size, which in fairseq 0.12.2
// blocks nothing on a CPU (its Python fallback compares the hypothesis
// buffer's padding; only the CUDA kernel blocks).
var errFairseqRepeats = fmt.Errorf("translate: NoRepeatNgram and RepetitionPenalty are JoeyNMT's rules, not fairseq's: fairseq 0.12.2's --no-repeat-ngram-size blocks nothing on a CPU, so Rules %q has neither", RulesFairseq)

// Result is the translation of one input.
type Result struct {
	// Source holds the source token ids that were translated.
	Source []int64
	// SourceTokens holds the source tokens as strings: vocabulary entries
	// when the source vocabulary is known, decimal ids otherwise.
	SourceTokens []string
	// Tokens holds the output token ids, EOS included when it was emitted.
	Tokens []int64
	// OutputTokens holds the output tokens as strings (vocabulary entries,
	// or decimal ids).
	OutputTokens []string
	// Text is the output as text when the target vocabulary is known:
	// tokens joined without a separator when the vocabulary is
	// character-level, else with spaces; SOS, EOS and PAD are left out.
	Text string
	// Attention holds one row per output token, each with one weight per
	// source token of this input (its own length, not the padded one).
	Attention [][]float32
	// Alignment is the first hypothesis' hard alignment (its
	// Hypothesis.Alignment).
	Alignment []AlignmentLink
	// Hypotheses is the n-best list, best first: beam search's
	// Options.NBest entries (fewer when the vocabulary ran out), greedy
	// decoding's one. Tokens, OutputTokens, Text and Attention are the
	// first one's. It is never empty in a result that was decoded.
	Hypotheses []Hypothesis
	// Score, NormalizedScore and PositionalScores are the first
	// hypothesis' (see Hypothesis), whatever the search: the score in
	// natural log, summed over the tokens and normalised as the search's
	// rules rank.
	Score, NormalizedScore float32
	PositionalScores       []float32
}

// Hypothesis is one entry of a beam search's n-best list.
type Hypothesis struct {
	// Tokens holds the output token ids, EOS included when the hypothesis
	// finished.
	Tokens []int64
	// OutputTokens and Text are as in Result.
	OutputTokens []string
	Text         string
	// Score is the hypothesis' log-probability: the float32 sum of its
	// tokens' log_probs. NormalizedScore is Score / len(Tokens) ** alpha
	// (Options.LengthPenalty), what the list is ordered by.
	Score, NormalizedScore float32
	// PositionalScores holds each token's log-probability (natural log)
	// where the search records them (fairseq's rules), else nil.
	PositionalScores []float32

	// Attention is the hypothesis' attention, one row per token (EOS
	// included) as in Result.Attention, where the search records it per
	// hypothesis (the steps engine's beam searches; a greedy result's one
	// hypothesis has the result's); nil under CallOptions.WithoutAttention
	// and on the loop engine's beam. fairseq-generate --print-alignment
	// aligns each hypothesis of the n-best with its own.
	Attention [][]float32
	// Alignment is the hypothesis' hard alignment from that attention,
	// made before WithoutAttention drops it: under fairseq's rules
	// fairseq-generate --print-alignment hard's links, else the
	// attention's own (each token but EOS to the source position it
	// attends to most; see docs/alignment.md). nil where the search
	// recorded no attention for the hypothesis.
	Alignment []AlignmentLink
}

// Translator decodes with one model directory. It is safe for
// concurrent use; see the package documentation.
type Translator struct {
	dir    string
	info   *modeldir.Info
	opt    Options
	engine string

	enc, dec, greedy *onnxrun.Session
	beamGraph        *onnxrun.Session // beam.onnx: the loop engine with Beam > 1
	notes            []string

	src, tgt vocab
	// tgtUNK is the target id spelled like the source's UNK token, -1
	// when there is none (ReplaceUnk).
	tgtUNK int64
	// ignoreBlocking are Options.IgnoreWhenBlocking's target token ids.
	ignoreBlocking []int64
	// rules are the decoding rules of the steps engine: attnx.json's
	// decoding, with Options.MinLen.
	rules *attention.Rules
	// unknownPieces counts the source pieces of text inputs that were not
	// in the vocabulary and went in as UNK.
	unknownPieces atomic.Int64
	// copy: the model has copy attention; its rows' ids from the source
	// vocabulary's size up are their own words outside it (Sources).
	copy bool

	mu        sync.RWMutex // read-held by calls, write-held by Close
	closed    bool
	pool      *pool // the steps engine's; Score opens it on the loop engine (stepsOnce)
	stepsOnce sync.Once
	stepsErr  error
	scheds    map[*Scheduler]struct{} // open Schedulers, guarded by mu
	ens       *ensemble               // the other members, for an ensemble (OpenEnsemble)
}

// targetIDs returns the target vocabulary's ids of tokens, an error
// naming the option (what) and the token when one is not there.
func (t *Translator) targetIDs(what string, tokens []string) ([]int64, error) {
	var ids []int64
	for _, tok := range tokens {
		id := slices.Index(t.info.TgtTokens, tok)
		if id < 0 {
			return nil, optionErrorf(what, "translate: %s: %q is not in the target vocabulary of %s", what, tok, filepath.Join(t.dir, "attnx.json"))
		}
		ids = append(ids, int64(id))
	}
	return ids, nil
}

// ReadDir checks that dir is a model directory and reads its attnx.json,
// without loading the graphs: what Open checks first, for a caller (a
// server) that wants the error before it does anything else.
func ReadDir(dir string) (*modeldir.Info, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &notFound{fmt.Sprintf("translate: model directory %s does not exist", dir), err}
	case err != nil:
		return nil, fmt.Errorf("translate: model directory: %w", err)
	case !st.IsDir():
		return nil, fmt.Errorf("translate: %s is not a directory; a model directory holds attnx.json, encoder.onnx and decoder.onnx", dir)
	}
	info, err := modeldir.ReadInfo(filepath.Join(dir, "attnx.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &notFound{fmt.Sprintf("translate: %s has no attnx.json: not an attnx model directory (it should hold attnx.json, encoder.onnx and decoder.onnx)", dir), err}
	}
	if err != nil {
		return nil, fmt.Errorf("translate: %w", err)
	}
	return info, nil
}

// Open reads dir/attnx.json, opens the sessions the engine needs and checks
// that their inputs and outputs agree with attnx.json (names, element types,
// ranks and the fixed sizes H, L and Vt).
func Open(dir string, opt Options) (*Translator, error) {
	info, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if !opt.NoModelDefaults {
		opt = ResolveDecoding(opt, info.Defaults)
	}
	// The loop engine's graph first: without it, the other settings' fit
	// to that engine is beside the point.
	if err := checkLoopGraph(dir, info, opt); err != nil {
		return nil, err
	}
	if err := checkOptions(opt); err != nil {
		return nil, err
	}
	infoPath := filepath.Join(dir, "attnx.json")
	t := &Translator{dir: dir, info: info, opt: opt}
	t.src = newVocab(info.SrcTokens, info.Special)
	t.tgt = newVocab(info.TgtTokens, info.Special)
	t.tgt.side = "target"
	if t.src.tok, t.tgt.tok, err = info.Tokenizers(dir); err != nil {
		return nil, fmt.Errorf("translate: %s: %w", infoPath, err)
	}
	if t.tgt.tok == nil && t.tgt.pieces != "" {
		// The output would keep the pieces ("Au@@ f unser@@ em").
		t.notes = append(t.notes, fmt.Sprintf("the model has no target tokenizer, but its target vocabulary holds %s pieces: the output keeps them as pieces; export it with the tokenizer it was trained with on the target side (attnx export --tgt-tokenizer FILE, or --tokenizer FILE when one serves both sides, as fairseq's BPE does)", t.tgt.pieces))
	}

	greedyFile := info.Files["greedy"]
	if greedyFile != "" && (strings.ContainsAny(greedyFile, `/\`) || greedyFile == "." || greedyFile == "..") {
		return nil, fmt.Errorf("translate: %s: files.greedy = %q: must be a plain file name inside the model directory", infoPath, greedyFile)
	}
	t.tgtUNK = info.TargetUNK()
	if info.Config.HasCopy() {
		if info.Special.UNK < 0 {
			return nil, fmt.Errorf("translate: %s: a copy-attention model needs the unknown token its decoder is fed for copied words; attnx.json has none", infoPath)
		}
		t.copy = true
	}
	if t.ignoreBlocking, err = t.targetIDs("IgnoreWhenBlocking", opt.IgnoreWhenBlocking); err != nil {
		return nil, err
	}
	if opt.ReplaceUnk && t.tgtUNK < 0 {
		return nil, optionErrorf("ReplaceUnk", "translate: ReplaceUnk: %s has no unknown token in both vocabularies", infoPath)
	}
	// Under attnx's rules BanUNK bans the unknown token as a toolkit's
	// rules ban tokens (JoeyNMT's generate_unk: false).
	specBan := opt.BanUNK && opt.Rules != RulesOpenNMT
	if t.rules, err = t.stepRules(opt.MinLen, specBan); err != nil {
		return nil, optionErrorf("BanUNK", "translate: BanUNK: %w", err)
	}
	if t.copy && opt.Engine == EngineLoop {
		return nil, optionErrorf("Engine", "translate: %s has copy attention, which decodes on the %q engine only (its dynamic vocabulary is per sentence, in Go), not %q", dir, EngineSteps, EngineLoop)
	}
	if err := t.checkCopySearch(t.searchOptions()); err != nil {
		return nil, err
	}
	switch opt.Engine {
	case "":
		t.engine = EngineSteps
		onmtGreedy := opt.Rules == RulesOpenNMT && (opt.BanUNK || opt.BlockNgram > 0) || specBan
		if greedyFile != "" && t.beam() == 1 && opt.MinLen == 0 && !t.copy {
			if _, err := os.Stat(filepath.Join(dir, greedyFile)); err == nil {
				t.engine = EngineLoop
				switch {
				case onmtGreedy:
					t.engine = EngineSteps
					t.notes = append(t.notes, "greedy decoding on the steps engine: "+greedyFile+" has no ban on the unknown token or n-gram blocking built in")
				case opt.Rules == RulesFairseq:
					t.engine = EngineSteps
					t.notes = append(t.notes, "greedy decoding on the steps engine: "+greedyFile+" lacks fairseq's last step, where only </s> may come, and its --unkpen and --temperature")
				}
			}
		}
	case EngineLoop:
		t.engine = EngineLoop // checkLoopGraph found its graph
	default:
		t.engine = opt.Engine
	}

	ropt := t.sessionOptions()
	fail := func(err error) (*Translator, error) {
		t.closeSessions()
		return nil, err
	}
	if t.engine == EngineLoop && t.beam() == 1 {
		if err := t.openGreedy(ropt, opt.Engine == ""); err != nil {
			return fail(err)
		}
	}
	if t.engine == EngineSteps {
		if err := t.openSteps(ropt); err != nil {
			return fail(err)
		}
	} else if t.beam() > 1 {
		if t.beamGraph, err = t.openRole(modeldir.RoleBeam, ropt, t.beamSpec()); err != nil {
			return fail(err)
		}
	}
	return t, nil
}

// openSteps opens encoder.onnx and decoder.onnx and the pool of the
// steps engine's executors.
func (t *Translator) openSteps(ropt onnxrun.Options) error {
	var err error
	if t.enc, err = t.openRole("encoder", ropt, t.encoderSpec()); err != nil {
		return err
	}
	if t.dec, err = t.openRole("decoder", ropt, t.decoderSpec()); err != nil {
		return err
	}
	m, err := decode.NewModel(t.enc, t.dec, decode.Dims{EncoderWidth: t.info.Config.EncoderWidth(), States: t.info.Config.States(), TgtVocab: t.info.TgtVocab})
	if err != nil {
		return fmt.Errorf("translate: %s: %w", t.dir, err)
	}
	t.pool = newPool(m, t.opt.MaxIdleBytes, t.maxLiveBytes())
	return nil
}

// stepsPool returns the steps engine's pool, opening its graphs the first
// time on a Translator of the loop engine (Score runs decoder.onnx step
// by step whatever the engine). The caller holds mu's read lock.
func (t *Translator) stepsPool() (*pool, error) {
	t.stepsOnce.Do(func() {
		if t.pool != nil {
			return
		}
		t.stepsErr = t.openSteps(t.sessionOptions())
	})
	return t.pool, t.stepsErr
}

// sessionOptions are the graphs' session settings, from Options.
func (t *Translator) sessionOptions() onnxrun.Options {
	o := t.opt
	return onnxrun.Options{Backend: o.Backend, IntraOpThreads: o.Threads, Device: o.Device, OptLevel: o.OptLevel, ORTLibrary: o.ORTLibrary}
}

// openGreedy opens greedy.onnx for the loop engine. A greedy.onnx without
// token_log_probs (exported by an attnx that did not record greedy
// scores) cannot give a result its score: with fallback (the engine left
// to Open) the Translator decodes on the steps engine instead, with a
// note; else it is an error.
func (t *Translator) openGreedy(ropt onnxrun.Options, fallback bool) error {
	notes := len(t.notes)
	s, err := t.openRole("greedy", ropt, t.greedySpec())
	if err != nil {
		return err
	}
	if hasOutput(s, attention.OutTokenLogProbs) {
		t.greedy = s
		return nil
	}
	s.Close()
	t.notes = t.notes[:notes]
	path := filepath.Join(t.dir, t.info.Files["greedy"])
	if !fallback {
		return optionErrorf("Engine", "translate: engine %q: %s has no output %q, so its results would have no score: it was exported by an earlier attnx; export the model again (attnx export) or use engine %q",
			EngineLoop, path, attention.OutTokenLogProbs, EngineSteps)
	}
	t.engine = EngineSteps
	t.notes = append(t.notes, fmt.Sprintf("greedy decoding on the steps engine: %s has no %s output (an earlier attnx's export), so the loop engine could not score its results; export the model again for the loop engine", path, attention.OutTokenLogProbs))
	return nil
}

// checkLoopGraph refuses Engine "loop" when the model directory lacks
// the graph it would run: greedy.onnx, or beam.onnx for beam search.
func checkLoopGraph(dir string, info *modeldir.Info, opt Options) error {
	if opt.Engine != EngineLoop {
		return nil
	}
	e := &LoopGraphError{Dir: dir, Graph: modeldir.GreedyFile}
	role := "greedy"
	if opt.Beam > 1 {
		e.Graph, e.Beam, role = modeldir.BeamFile, opt.Beam, modeldir.RoleBeam
	}
	e.Named = info.Files[role]
	if e.Named == "" {
		return e
	}
	if _, err := os.Stat(filepath.Join(dir, e.Named)); errors.Is(err, fs.ErrNotExist) {
		return e
	}
	return nil
}

// LoopGraphError is Open's error for the loop engine asked of a model
// directory without the graph it needs: greedy.onnx, or beam.onnx for beam
// search (Options.Beam > 1, the model's default included).
type LoopGraphError struct {
	// Dir is the model directory, Graph the missing graph's file name.
	Dir, Graph string
	// Named is the file attnx.json names for the graph, which does not
	// exist; "" when it names none.
	Named string
	// Beam is Options.Beam when Graph is beam.onnx.
	Beam int
}

// Error names the missing graph and the remedies: export it, or use engine steps.
func (e *LoopGraphError) Error() string {
	missing := fmt.Sprintf("%s names no %s model (files.%s)", filepath.Join(e.Dir, "attnx.json"), strings.TrimSuffix(e.Graph, ".onnx"), strings.TrimSuffix(e.Graph, ".onnx"))
	if e.Named != "" {
		missing = fmt.Sprintf("%s does not exist", filepath.Join(e.Dir, e.Named))
	}
	if e.Graph == modeldir.BeamFile {
		return fmt.Sprintf("translate: engine %q with beam search (Beam = %d) needs beam.onnx, and %s; re-export with `attnx export --beam`, or use engine %q",
			EngineLoop, e.Beam, missing, EngineSteps)
	}
	return fmt.Sprintf("translate: engine %q needs greedy.onnx, and %s; re-export with `attnx export --greedy`, or use engine %q",
		EngineLoop, missing, EngineSteps)
}

func checkOptions(opt Options) error {
	switch opt.Engine {
	case "", EngineSteps, EngineLoop:
	default:
		return optionErrorf("Engine", "translate: unknown engine %q: want %q or %q (or empty for the default)", opt.Engine, EngineSteps, EngineLoop)
	}
	switch opt.Device {
	case "", onnxrun.DeviceCPU, onnxrun.DeviceCUDA, onnxrun.DeviceAuto:
	default:
		return optionErrorf("Device", "translate: unknown device %q: want %q, %q or %q", opt.Device, onnxrun.DeviceCPU, onnxrun.DeviceCUDA, onnxrun.DeviceAuto)
	}
	switch opt.Backend {
	case "", onnxrun.BackendORT:
	case onnxrun.BackendGo:
		if opt.Device == onnxrun.DeviceCUDA {
			return optionErrorf("Device", "translate: the native backend (%q) runs on the CPU only; device %q needs backend %q", onnxrun.BackendGo, opt.Device, onnxrun.BackendORT)
		}
	default:
		return optionErrorf("Backend", "translate: unknown backend %q: want %q or %q", opt.Backend, onnxrun.BackendORT, onnxrun.BackendGo)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Threads", opt.Threads}, {"MaxLen", opt.MaxLen}, {"MinLen", opt.MinLen}, {"MaxSourceLen", opt.MaxSourceLen}, {"BatchSize", opt.BatchSize}} {
		if f.v < 0 {
			return optionErrorf(f.name, "translate: %s = %d: must not be negative", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"MaxIdleBytes", opt.MaxIdleBytes}, {"MaxLiveBytes", opt.MaxLiveBytes}} {
		if f.v < 0 {
			return optionErrorf(f.name, "translate: %s = %d: must not be negative", f.name, f.v)
		}
	}
	if opt.LengthPenaltyWu && opt.Engine == EngineLoop {
		return optionErrorf("LengthPenaltyWu", "translate: LengthPenaltyWu runs on the steps engine, not the loop engine (beam.onnx ranks by score / len ** alpha)")
	}
	switch opt.Rules {
	case "", RulesSpec:
	case RulesFairseq:
		if opt.Engine == EngineLoop {
			return optionErrorf("Rules", "translate: Rules %q runs on the steps engine, not the loop engine (its graphs have the spec's searches built in)", opt.Rules)
		}
	case RulesJoeyNMT:
		if opt.Engine == EngineLoop && opt.Beam > 1 {
			return optionErrorf("Rules", "translate: Rules %q runs on the steps engine, not the loop engine (beam.onnx has the spec's beam search built in)", opt.Rules)
		}
	case RulesOpenNMT:
		if opt.Engine == EngineLoop {
			return optionErrorf("Rules", "translate: Rules %q runs on the steps engine, not the loop engine (beam.onnx has the spec's beam search built in)", opt.Rules)
		}
		if opt.BlockNgram < 0 {
			return optionErrorf("BlockNgram", "translate: BlockNgram = %d: must not be negative", opt.BlockNgram)
		}
		if p := opt.OpenNMTPenalty; p != "" && p != decode.PenaltyNone && p != decode.PenaltyAvg && p != decode.PenaltyWu {
			return optionErrorf("OpenNMTPenalty", "translate: OpenNMTPenalty %q: want none, avg or wu", p)
		}
	default:
		return optionErrorf("Rules", "translate: Rules %q: want %s", opt.Rules, rulesList)
	}
	if (opt.NoRepeatNgram >= 2 || opt.RepetitionPenalty > 1) && opt.Rules == RulesFairseq {
		return optionError("NoRepeatNgram", errFairseqRepeats)
	}
	if tt := opt.Temperature; decode.TemperatureRange(tt) != nil || tt != 0 && opt.Rules != RulesFairseq && !(opt.Rules == RulesOpenNMT && opt.Sampling) {
		return optionErrorf("Temperature", "translate: Temperature = %v: want 0 (none) or a value from %g to %g, with Rules %q or with Sampling under %q", tt, float64(decode.MinTemperature), float64(decode.MaxTemperature), RulesFairseq, RulesOpenNMT)
	}
	if u := opt.UnkPenalty; math.IsNaN(u) || math.IsInf(u, 0) || u != 0 && opt.Rules != RulesFairseq {
		return optionErrorf("UnkPenalty", "translate: UnkPenalty = %v: want a finite value, with Rules %q", u, RulesFairseq)
	}
	if (opt.NoRepeatNgram >= 2 || opt.RepetitionPenalty > 1) && opt.Engine == EngineLoop && opt.Beam > 1 {
		return optionErrorf("NoRepeatNgram", "translate: NoRepeatNgram and RepetitionPenalty run on the steps engine, not beam.onnx")
	}
	if opt.BanUNK && opt.Engine == EngineLoop {
		return optionErrorf("BanUNK", "translate: BanUNK runs on the steps engine, not the loop engine (whose graphs have their decoding rules built in)")
	}
	if opt.MinLen > 0 && opt.Engine == EngineLoop {
		return optionErrorf("MinLen", "translate: MinLen %d runs on the steps engine, not the loop engine (whose graphs have their decoding rules built in)", opt.MinLen)
	}
	if p := opt.RepetitionPenalty; math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		return optionErrorf("RepetitionPenalty", "translate: RepetitionPenalty = %v: want a finite value >= 0", p)
	}
	if opt.NoRepeatNgram < 0 {
		return optionErrorf("NoRepeatNgram", "translate: NoRepeatNgram = %d: must not be negative", opt.NoRepeatNgram)
	}
	if (opt.BlockNgram != 0 || len(opt.IgnoreWhenBlocking) > 0) && opt.Rules != RulesOpenNMT {
		return optionErrorf("BlockNgram", "translate: BlockNgram %d and IgnoreWhenBlocking %q go with Rules %q (OpenNMT-py's -block_ngram_repeat)", opt.BlockNgram, opt.IgnoreWhenBlocking, RulesOpenNMT)
	}
	if r := opt.Ratio; math.IsNaN(r) || math.IsInf(r, 0) || r < 0 || r > 0 && opt.Rules != RulesOpenNMT {
		return optionErrorf("Ratio", "translate: Ratio = %v: want a finite value >= 0, with Rules %q", r, RulesOpenNMT)
	}
	switch c := opt.CoveragePenalty; {
	case c != "" && c != decode.CoverageNone && c != decode.CoverageWu && c != decode.CoverageSummary:
		return optionErrorf("CoveragePenalty", "translate: CoveragePenalty %q: want none, wu or summary", c)
	case math.IsNaN(opt.Beta) || math.IsInf(opt.Beta, 0):
		return optionErrorf("Beta", "translate: Beta = %v: want a finite value", opt.Beta)
	case (c != "" && c != decode.CoverageNone || opt.Beta != 0 || opt.StepwisePenalty) && opt.Rules != RulesOpenNMT:
		return optionErrorf("CoveragePenalty", "translate: CoveragePenalty %q, Beta %v and StepwisePenalty go with Rules %q (OpenNMT-py's -coverage_penalty, -beta, -stepwise_penalty)", c, opt.Beta, RulesOpenNMT)
	}
	if opt.Sampling && opt.Rules != RulesFairseq && opt.Rules != RulesOpenNMT || !opt.Sampling && (opt.SamplingTopK != 0 || opt.SamplingTopP != 0) {
		return optionErrorf("Sampling", "translate: Sampling (with SamplingTopK, SamplingTopP) goes with Rules %q or %q", RulesFairseq, RulesOpenNMT)
	}
	if k, p := opt.SamplingTopK, opt.SamplingTopP; k < 0 || math.IsNaN(p) || p < 0 || p > 1 || k > 0 && p > 0 {
		return optionErrorf("SamplingTopK", "translate: SamplingTopK %d, SamplingTopP %v: want one of them, TopK >= 1 or TopP in (0, 1]", k, p)
	}
	if err := checkDiverse(opt); err != nil {
		return err
	}
	if a := opt.MaxLenA; math.IsNaN(a) || math.IsInf(a, 0) || a < 0 || a > 0 && opt.Rules != RulesFairseq {
		return optionErrorf("MaxLenA", "translate: MaxLenA = %v: want a finite value >= 0, with Rules %q", a, RulesFairseq)
	}
	if r := opt.MaxLenRatio; r != nil && (math.IsNaN(*r) || math.IsInf(*r, 0) || *r < 0) {
		return optionErrorf("MaxLenRatio", "translate: MaxLenRatio = %v: want a finite value >= 0", *r)
	}
	if opt.MinLen > 0 && opt.MaxLen > 0 && opt.MinLen >= opt.MaxLen {
		return optionErrorf("MinLen", "translate: MinLen %d must be below MaxLen %d (EOS counts in MaxLen)", opt.MinLen, opt.MaxLen)
	}
	if err := checkRules(opt); err != nil {
		return err
	}
	return checkBeamOptions(opt)
}

// openRole opens the model file attnx.json names for role and checks its
// interface.
func (t *Translator) openRole(role string, ropt onnxrun.Options, spec graphSpec) (*onnxrun.Session, error) {
	name := t.info.Files[role]
	path := filepath.Join(t.dir, name)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &notFound{fmt.Sprintf("translate: %s model %s does not exist (attnx.json files.%s = %q)", role, path, role, name), err}
	case err != nil:
		return nil, fmt.Errorf("translate: %s model: %w", role, err)
	case st.IsDir():
		return nil, fmt.Errorf("translate: %s model %s is a directory, not an .onnx file", role, path)
	}
	s, err := onnxrun.Open(path, ropt)
	if err != nil {
		return nil, fmt.Errorf("translate: %s model %s cannot be loaded: %w", role, path, err)
	}
	if err := spec.check(path, s); err != nil {
		s.Close()
		return nil, err
	}
	t.notes = append(t.notes, s.Notes()...)
	return s, nil
}

// Info returns a copy of the model directory's attnx.json.
func (t *Translator) Info() modeldir.Info {
	m := *t.info
	m.SrcTokens = append([]string(nil), m.SrcTokens...)
	m.TgtTokens = append([]string(nil), m.TgtTokens...)
	files := make(map[string]string, len(m.Files))
	for k, v := range m.Files {
		files[k] = v
	}
	m.Files = files
	return m
}

// Engine returns the engine in use: "steps" or "loop".
func (t *Translator) Engine() string { return t.engine }

// Device returns the device the sessions run on: "cpu" or "cuda".
func (t *Translator) Device() string {
	if t.greedy != nil {
		return t.greedy.Device()
	}
	if t.beamGraph != nil {
		return t.beamGraph.Device()
	}
	if t.enc != nil {
		return t.enc.Device()
	}
	return ""
}

// Backend returns the engine the graphs run on: "ort" or "go".
func (t *Translator) Backend() string {
	for _, s := range []*onnxrun.Session{t.greedy, t.beamGraph, t.enc} {
		if s != nil {
			return s.Backend()
		}
	}
	return ""
}

// Notes returns what ONNX Runtime setup wants the user to know, such as a
// CUDA fallback with Device "auto".
func (t *Translator) Notes() []string { return append([]string(nil), t.notes...) }

// HasSourceVocab reports whether attnx.json holds the source vocabulary, so
// that Translate can be used.
func (t *Translator) HasSourceVocab() bool { return t.src.tokens != nil }

// HasTargetVocab reports whether attnx.json holds the target vocabulary, so
// that Results carry Text.
func (t *Translator) HasTargetVocab() bool { return t.tgt.tokens != nil }

// Close waits for calls in progress and releases the sessions and every
// pooled tensor. Calling it again does nothing.
func (t *Translator) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	for s := range t.scheds {
		s.s.Close()
	}
	if t.pool != nil {
		t.pool.close()
	}
	return errors.Join(t.closeSessions(), t.closeMembers())
}

func (t *Translator) closeSessions() error {
	var errs []error
	for _, s := range []*onnxrun.Session{t.enc, t.dec, t.greedy, t.beamGraph} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// Translate tokenises texts with the model's tokenizer or source
// vocabulary and translates them as the model's toolkit translates a file
// of these lines with its defaults: each text's output limit is the one
// the toolkit gives it in the batch it would put it in (the package
// documentation's "Output limits"; Options.PerSentenceLimits gives each
// text the limit of its own length instead). A blank text (white space
// only) gets the zero Result, as a test set's blank line does. Results
// are in input order, one per text. A text that cannot be translated
// (invalid UTF-8, a word outside the vocabulary, too long) fails the call
// before anything runs, with an *InputError naming its row, which
// errors.As also finds as a *RequestError.
func (t *Translator) Translate(ctx context.Context, texts []string) ([]Result, error) {
	return t.translateTexts(ctx, texts, func(src Sources) ([]Result, error) {
		var lens []int
		if !t.opt.PerSentenceLimits {
			lens = t.corpusLens(src.Rows, CorpusOptions{})
		}
		return t.translateIDs(ctx, src, lens, false)
	})
}

// translateTexts tokenises the texts that are not blank and translates
// them with call; blank texts get the zero Result, and an *InputError's
// Row counts among all texts.
func (t *Translator) translateTexts(ctx context.Context, texts []string, call func(Sources) ([]Result, error)) ([]Result, error) {
	idx := make([]int, 0, len(texts))
	kept := make([]string, 0, len(texts))
	for i, s := range texts {
		if !blank(s) {
			idx, kept = append(idx, i), append(kept, s)
		}
	}
	src, err := t.encodeTexts(ctx, kept)
	var res []Result
	if err == nil {
		res, err = call(src)
	}
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) && ie.Row >= 0 && ie.Row < len(idx) {
			ie.Row = idx[ie.Row]
		}
		return nil, err
	}
	if len(idx) == len(texts) {
		return res, nil
	}
	out := make([]Result, len(texts))
	for k, i := range idx {
		out[i] = res[k]
	}
	return out, nil
}

// blank reports whether a text is white space only: a blank line, which
// gets the zero Result.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

// encodeTexts tokenises texts with the source vocabulary, and wraps each
// in the tokens the model saw around every sentence in training
// (attnx.json's src_prefix and src_suffix: JoeyNMT's </s>, the chatbot's
// EOS, bentrevett's <sos> ... <eos>).
func (t *Translator) encodeTexts(ctx context.Context, texts []string) (Sources, error) {
	return t.encodeTextsAs(ctx, texts, false)
}

// encodeTextsAs is encodeTexts with pieces saying the texts are source
// pieces already (Options.Pretokenized for this call). A copy-attention
// model's words outside the source vocabulary are each row's own, with
// ids from its size up (Sources).
func (t *Translator) encodeTextsAs(ctx context.Context, texts []string, pieces bool) (Sources, error) {
	if !t.src.known() {
		return Sources{}, &NoSourceVocabularyError{Info: filepath.Join(t.dir, "attnx.json")}
	}
	src := Sources{Rows: make([][]int64, len(texts))}
	for i, s := range texts {
		if err := ctx.Err(); err != nil {
			return Sources{}, err
		}
		if !utf8.ValidString(s) {
			return Sources{}, &InputError{Row: i, Position: -1, Msg: fmt.Sprintf("invalid UTF-8 at byte %d: text must be UTF-8", invalidUTF8(s))}
		}
		var oov func(string) int64
		var words []string
		if t.copy {
			oov = rowOOV(int64(t.info.SrcVocab), &words)
		}
		ids, err := t.src.encode(i, s, t.opt.UnknownToUNK, t.info.Special.UNK, &t.unknownPieces, t.opt.Pretokenized || pieces, oov)
		if err != nil {
			return Sources{}, err
		}
		src.Rows[i] = t.info.SourceIDs(ids)
		if words != nil {
			if src.Words == nil {
				src.Words = make([][]string, len(texts))
			}
			src.Words[i] = words
		}
	}
	return src, nil
}

// invalidUTF8 returns the offset of s's first byte that is not valid
// UTF-8 (len(s) when there is none).
func invalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return len(s)
}

// TranslateIDs decodes sources (greedily, or with beam search when
// Options.Beam > 1), one row of source token ids each.
// Every row is checked before anything runs. Rows are decoded in batches of
// at most Options.BatchSize, in order; results are in input order.
//
// For a model with copy attention, ids from the source vocabulary's size
// up are refused: they stand for the words of an input's own text
// (Sources), which TranslateSources takes.
func (t *Translator) TranslateIDs(ctx context.Context, sources [][]int64) ([]Result, error) {
	return t.translateIDs(ctx, Sources{Rows: sources}, nil, false)
}

// TranslateSources decodes sources as TranslateIDs does, each row with its
// own words outside the source vocabulary (Sources.Words): what Translate
// does with the rows Tokenize makes of texts.
func (t *Translator) TranslateSources(ctx context.Context, sources Sources) ([]Result, error) {
	return t.translateIDs(ctx, sources, nil, false)
}

// translateIDs is TranslateSources with lens, when not nil, the n of each
// row's output limit (searchOpts.lens).
func (t *Translator) translateIDs(ctx context.Context, sources Sources, lens []int, noAttention bool) ([]Result, error) {
	so := t.searchOptions()
	so.lens, so.noAttention = lens, noAttention
	return t.decodeBatches(sources, so, func(rows [][]int64, so searchOpts) ([]Result, error) {
		switch {
		case t.engine == EngineLoop && t.beam() > 1:
			return t.runLoopBeam(ctx, rows, so)
		case t.engine == EngineLoop:
			return t.runLoop(ctx, rows, so)
		default:
			return t.runSearch(ctx, rows, so)
		}
	})
}

// acquire checks every row of sources and holds the Translator open (its
// read lock) until release is called; it fails with ErrClosed once the
// Translator is closed.
func (t *Translator) acquire(sources Sources) (release func(), err error) {
	if err := t.checkRows(sources); err != nil {
		return nil, err
	}
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return nil, ErrClosed
	}
	return t.mu.RUnlock, nil
}

// decodeBatches checks every row of sources and its output limits
// (rowLimits), then decodes them with run in batches of at most
// Options.BatchSize, in order (each with its part of so.lens), and
// finishes the results.
func (t *Translator) decodeBatches(sources Sources, so searchOpts, run func(rows [][]int64, so searchOpts) ([]Result, error)) ([]Result, error) {
	release, err := t.acquire(sources)
	if err != nil {
		return nil, err
	}
	defer release()
	if _, err := t.rowLimits(sources.Rows, so); err != nil {
		return nil, err
	}
	bs := t.batchSize()
	out := make([]Result, 0, len(sources.Rows))
	for start := 0; start < len(sources.Rows); start += bs {
		end := min(start+bs, len(sources.Rows))
		batch, part := sources.part(start, end), so
		rows := batch.Rows
		if so.lens != nil {
			part.lens = so.lens[start:end]
		}
		part.words = batch.Words
		if so.prefixes != nil {
			part.prefixes = so.prefixes[start:end]
		}
		res, err := run(rows, part)
		if err != nil {
			return nil, err
		}
		for i := range res {
			t.finish(&res[i], rows[i], batch.rowWords(i), so)
		}
		out = append(out, res...)
	}
	return out, nil
}

// batchSize is Options.BatchSize or its default.
func (t *Translator) batchSize() int {
	if t.opt.BatchSize == 0 {
		return DefaultBatchSize
	}
	return t.opt.BatchSize
}

// maxLiveBytes is Options.MaxLiveBytes or its default.
func (t *Translator) maxLiveBytes() int64 {
	if t.opt.MaxLiveBytes == 0 {
		return DefaultMaxLiveBytes
	}
	return t.opt.MaxLiveBytes
}

// checkRows validates every source row; a copy model's ids from the
// vocabulary's size up must be the row's own words (Sources.Words).
func (t *Translator) checkRows(sources Sources) error {
	vs := int64(t.info.SrcVocab)
	if sources.Words != nil && len(sources.Words) != len(sources.Rows) {
		return fmt.Errorf("translate: Sources: %d rows of words for %d rows of ids: want one per row", len(sources.Words), len(sources.Rows))
	}
	for i, row := range sources.Rows {
		if len(row) == 0 {
			return &InputError{Row: i, Position: -1, Msg: "empty input, nothing to translate"}
		}
		if t.opt.MaxSourceLen > 0 && len(row) > t.opt.MaxSourceLen {
			return &InputError{Row: i, Position: -1, Msg: fmt.Sprintf("%d tokens", len(row)), SourceLimit: t.opt.MaxSourceLen}
		}
		if err := t.info.Config.CheckSourceLength(len(row)); err != nil {
			return &InputError{Row: i, Position: -1, Msg: err.Error()}
		}
		words := sources.rowWords(i)
		if !t.copy {
			words = nil
		}
		for j, id := range row {
			if id < 0 || id >= vs+int64(len(words)) {
				return &InputError{Row: i, Position: j, Msg: outsideVocabMsg(id, j, vs, t.copy)}
			}
		}
	}
	return nil
}

// Limit returns the output length limit of a source of n tokens under
// the Translator's own settings (OutputLimits' Max for a call that sets
// nothing): Options.MaxLen, MaxLenA or MaxLenRatio, else the model's own
// (attnx.json's defaults), else DefaultMaxLen.
func (t *Translator) Limit(n int) int { return t.limit(n) }

// fairseq-interactive's limit (--max-len-b 200, then </s>) and fairseq's
// LSTM's max_target_positions.
const (
	fairseqMaxLen    = 201
	fairseqPositions = 1024
)

// DefaultMaxLen is the output length limit of a source of n tokens when
// none is set (Options.MaxLen, CallOptions.MaxLen): 2n+10, EOS included.
func DefaultMaxLen(n int) int { return 2*n + 10 }

// finish fills the string views of a result, replacing unknown tokens
// and dropping the attention as so says; words are the source row's own
// words outside the vocabulary (Sources.Words).
func (t *Translator) finish(r *Result, src []int64, words []string, so searchOpts) {
	enc := t.encoderRow(src)
	r.Source = append([]int64(nil), enc...)
	r.SourceTokens = t.sourceWords(src, words)
	unkSrc := t.unkSources(enc, r.SourceTokens, so)
	cm := t.copyMapOf(r.SourceTokens)
	output := func(tokens []int64) ([]string, string) {
		out := t.tgt.strings(tokens)
		words := copied(cm, tokens)
		for i, w := range words {
			out[i] = w
		}
		return out, t.tgt.textWith(tokens, words)
	}
	r.OutputTokens, r.Text = output(r.Tokens)
	var skip []bool
	if so.replaceUnk && so.fairseq {
		skip = t.fairseqUnaligned(enc)
	}
	if so.replaceUnk {
		r.Text = t.replaceUnk(r.Tokens, r.Attention, unkSrc, skip, r.OutputTokens, r.Text, cm)
	}
	att := r.Attention
	r.Alignment = t.alignment(r.Tokens, r.Attention, enc, so)
	if so.noAttention {
		r.Attention = nil
	}
	for i := range r.Hypotheses {
		h := &r.Hypotheses[i]
		h.OutputTokens, h.Text = output(h.Tokens)
		if h.Attention == nil && i == 0 {
			h.Attention = att // greedy decoding's one hypothesis: the result's
		}
		h.Alignment = t.alignment(h.Tokens, h.Attention, enc, so)
		if so.replaceUnk {
			// In every hypothesis of the n-best, as OpenNMT-py's
			// -replace_unk replaces.
			h.Text = t.replaceUnk(h.Tokens, h.Attention, unkSrc, skip, h.OutputTokens, h.Text, cm)
		}
		if so.noAttention {
			h.Attention = nil
		}
	}
	if len(r.Hypotheses) > 0 {
		best := r.Hypotheses[0]
		r.Score, r.NormalizedScore, r.PositionalScores = best.Score, best.NormalizedScore, best.PositionalScores
	}
}

// replaceUnk replaces each unknown output token of a hypothesis (tokens;
// the target vocabulary's entry named like the source's UNK token) with
// the source token it attends to most (attention over src), in out and in
// the text it returns, as OpenNMT-py's -replace_unk does. Token ids stay.
// skip, when not nil, marks the source positions the toolkit's alignment
// leaves out (fairseqUnaligned). cm, for a copy model, gives the copied
// tokens' words.
func (t *Translator) replaceUnk(tokens []int64, attention [][]float32, src []string, skip []bool, out []string, text string, cm *decode.CopyMap) string {
	if t.tgtUNK < 0 {
		return text
	}
	repl := copied(cm, tokens)
	if repl == nil {
		repl = map[int]string{}
	}
	n := len(repl)
	for i, id := range tokens {
		if id != t.tgtUNK || i >= len(attention) || len(attention[i]) != len(src) {
			continue
		}
		best := alignedArgmax(attention[i], skip)
		if best < 0 {
			continue // nothing to align to: the <unk> stays
		}
		w := t.opt.ReplaceUnkDict.replacement(src[best])
		repl[i] = w
		out[i] = w
	}
	if len(repl) == n {
		return text
	}
	return t.tgt.textWith(tokens, repl)
}

// fairseqUnaligned marks the source positions fairseq's hard alignment
// leaves out (utils.extract_hard_alignment): its end of sentence, which it
// appends to every source, and padding. fairseq's source and target
// dictionaries number their specials alike, so attnx.json's are theirs.
func (t *Translator) fairseqUnaligned(src []int64) []bool {
	sp := t.info.Special
	skip := make([]bool, len(src))
	for j, id := range src {
		skip[j] = id == sp.EOS || id == sp.PAD
	}
	return skip
}

// alignedArgmax is the position of row's largest value among those skip
// does not mark (all when skip is nil), the first of equal ones; -1 when
// every position is marked.
func alignedArgmax(row []float32, skip []bool) int {
	if skip == nil {
		return int(decode.Argmax(row))
	}
	best := -1
	for j, x := range row {
		if !skip[j] && (best < 0 || x > row[best]) {
			best = j
		}
	}
	return best
}

// fillSources writes rows into source_ids [B*S] and their lengths. The
// padding is source id 0, valid in every source vocabulary: positions past
// a row's length are masked, so any valid id does, but PAD is a target-side
// token and may lie outside the source vocabulary.
func fillSources(ids, lens []int64, rows [][]int64, S int) {
	for r, row := range rows {
		line := ids[r*S : (r+1)*S]
		copy(line, row)
		clear(line[len(row):])
		lens[r] = int64(len(row))
	}
}

func maxLen(rows [][]int64) int {
	m := 0
	for _, r := range rows {
		m = max(m, len(r))
	}
	return m
}

// InputError reports a problem with one input, found before anything runs.
type InputError struct {
	// Row is the index of the input in the call, from 0.
	Row int
	// Position is the index of the offending token or character in the
	// input, from 0, or -1 when the problem is the whole input.
	Position int
	// Msg says what is wrong, without the row and without the remedy
	// that the fields below hold: each surface words that in its own
	// terms (Describe).
	Msg string
	// SourceLimit is, for an input over Options.MaxSourceLen, that
	// limit; Msg then says how many tokens the input has.
	SourceLimit int
	// UNK is, for a character or word outside the source vocabulary of a
	// model with an UNK token, what Options.UnknownToUNK would map it to.
	UNK *UNKHint
}

// UNKHint is an unknown character or word's remedy: mapping it to the
// model's UNK token.
type UNKHint struct {
	// What is "character" or "word".
	What string
	// Token and ID are the UNK token and its id.
	Token string
	ID    int64
}

// Describe returns Msg completed with its remedy, worded by unk (for
// UNKHint: "set UnknownToUNK to map ...") and limit (for SourceLimit: "the
// limit MaxSourceLen = 30"), so that a command line can name its flags and
// a server its own.
func (e *InputError) Describe(unk func(UNKHint) string, limit func(int) string) string {
	switch {
	case e.SourceLimit > 0:
		return fmt.Sprintf("%s, more than %s", e.Msg, limit(e.SourceLimit))
	case e.UNK != nil:
		return fmt.Sprintf("%s (%s)", e.Msg, unk(*e.UNK))
	}
	return e.Msg
}

// Error returns "translate: input row R: MSG" with the remedy in the
// terms of this package's Options.
func (e *InputError) Error() string {
	return fmt.Sprintf("translate: input row %d: %s", e.Row, e.optionsText())
}

// optionsText is Describe in the terms of this package's Options.
func (e *InputError) optionsText() string {
	return e.Describe(
		func(h UNKHint) string {
			return fmt.Sprintf("set UnknownToUNK to map unknown %ss to %s (id %d)", h.What, h.Token, h.ID)
		},
		func(n int) string { return fmt.Sprintf("the limit MaxSourceLen = %d", n) })
}

// NoSourceVocabularyError is text given to a model whose attnx.json has no
// source vocabulary: it takes token ids. Each surface names its own way of
// giving them (Remedy).
type NoSourceVocabularyError struct {
	// Info is the attnx.json without the vocabulary.
	Info string
}

// Remedy returns the error's message with the remedy named by the caller.
func (e *NoSourceVocabularyError) Remedy(remedy string) string {
	return fmt.Sprintf("%s has no source vocabulary (src_vocab): %s", e.Info, remedy)
}

// Error returns the message with the remedy in this package's terms.
func (e *NoSourceVocabularyError) Error() string {
	return "translate: " + e.Remedy("use TranslateIDs with token ids")
}
