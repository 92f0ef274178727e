// Package fairseqgen does what fairseq-generate does with a data-bin
// split: it decodes the binarized sentences (fairseqdata) with an attnx
// model directory exported from the fairseq checkpoint, in fairseq's
// batches and order, through translate's fairseq search, and writes
// fairseq-generate's output: per sentence S- (source), T- (target), and
// per hypothesis H- (score in base 2 and tokens), D- (the same, as
// fairseq's decode_fn undoes --bpe and --tokenizer), P- (each token's
// score in base 2) and with --print-alignment A- (the hypothesis'
// alignment to the source, hard or soft), then "Generate SPLIT with beam=K:
// BLEU4 = ..." from fairseq's own BLEU scorer (BLEU) or, with Scoring
// "sacrebleu", sacreBLEU's corpus BLEU of the 13a-tokenized lines
// (mtscore).
package fairseqgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/attnx/attnx/fairseqdata"
	"github.com/attnx/attnx/moses"
	"github.com/attnx/attnx/mtscore"
	"github.com/attnx/attnx/outformat"
	"github.com/attnx/attnx/translate"
)

// Scorers fairseq-generate's --scoring takes here.
const (
	ScoringBLEU      = "bleu"
	ScoringSacreBLEU = "sacrebleu"
)

// Options are fairseq-generate's settings that are not the search's (the
// search's are the Translator's: translate.Options' Beam, NBest,
// LengthPenalty, UnkPenalty, MaxLenA, MaxLen, MinLen ...).
type Options struct {
	// Subset is --gen-subset ("" is test). fairseq shuffles every split
	// but test before sorting it by length, with numpy's generator seeded
	// by --seed (Seed; nil is fairseq's default, 1).
	Subset string
	Seed   *uint32
	// SrcLang and TgtLang are --source-lang and --target-lang ("" for
	// both: from the file names).
	SrcLang, TgtLang string
	// DatasetImpl is --dataset-impl ("": as fairseq infers it).
	DatasetImpl string
	// MaxTokens and BatchSize are --max-tokens and --batch-size (0: no
	// bound, which puts the split in one batch); Multiple is
	// --required-batch-size-multiple (0 is fairseq's default, 8).
	MaxTokens, BatchSize, Multiple int
	// NBest is --nbest (0 is 1); the Translator must list at least as
	// many hypotheses.
	NBest int
	// PostProcess is --post-process / --remove-bpe's symbol ("": none;
	// --remove-bpe alone is "subword_nmt").
	PostProcess string
	// BPE and Tokenizer are --bpe and --tokenizer, which fairseq-generate
	// undoes on the printed S-, T- and D- lines (its decode_fn) and
	// scores the undone lines with: BPE "" (none), "subword_nmt" (its
	// "@@ " joiner) or "sentencepiece"; Tokenizer "" or "moses" (sacremoses'
	// detokenizer for the target language, the moses package).
	BPE, Tokenizer string
	// Quiet prints only the BLEU line (--quiet).
	Quiet bool
	// PrintAlignment is --print-alignment: "" (none), "hard" or "soft",
	// an A- line after each hypothesis' P- line (see Alignment).
	PrintAlignment string
	// Scoring is --scoring: "bleu" ("") or "sacrebleu".
	Scoring string
	// Beam is the beam the BLEU line names ("with beam=5"): the
	// Translator's beam.
	Beam int
	// ScoreReference is --score-reference: no search, each sentence's
	// reference is scored by teacher forcing (translate's ScoreIDs, as
	// fairseq's SequenceScorer does) and printed as its one hypothesis:
	// H- the mean log-prob per token in base 2, P- each token's.
	ScoreReference bool
	// PrefixSize is --prefix-size: each sentence's first PrefixSize
	// reference tokens (fewer where the reference is shorter: its </s>
	// is not forced) forced as the start of every hypothesis, their
	// log-probs in its score (translate's CallOptions.Prefixes).
	PrefixSize int
}

// Summary is what a run did.
type Summary struct {
	Sentences, Batches int
	// Tokens are the best hypotheses' tokens, </s> included (fairseq's
	// "Translated N sentences (T tokens)").
	Tokens int
	// Score is the BLEU line's result string ("" without targets).
	Score string
	// Impl is the dataset format read; SrcLang and TgtLang the pair.
	Impl, SrcLang, TgtLang string
}

// Generate runs fairseq-generate's loop over the split of dataDir with tr
// and writes its lines to w.
func Generate(ctx context.Context, tr *translate.Translator, dataDir string, opt Options, w io.Writer) (*Summary, error) {
	if opt.Subset == "" {
		opt.Subset = "test"
	}
	if opt.NBest == 0 {
		opt.NBest = 1
	}
	if opt.Multiple == 0 {
		opt.Multiple = 8
	}
	switch opt.Scoring {
	case "":
		opt.Scoring = ScoringBLEU
	case ScoringBLEU, ScoringSacreBLEU:
	default:
		return nil, fmt.Errorf("fairseqgen: --scoring %q: expected %s or %s", opt.Scoring, ScoringBLEU, ScoringSacreBLEU)
	}
	if _, err := fairseqdata.PostProcess("", opt.PostProcess); err != nil {
		return nil, err
	}
	if opt.BPE != "" && opt.BPE != "subword_nmt" && opt.BPE != "sentencepiece" {
		return nil, fmt.Errorf("fairseqgen: --bpe %q: expected subword_nmt or sentencepiece", opt.BPE)
	}
	if opt.PrintAlignment != "" && opt.PrintAlignment != AlignHard && opt.PrintAlignment != AlignSoft {
		return nil, fmt.Errorf("fairseqgen: --print-alignment %q: expected %s or %s", opt.PrintAlignment, AlignHard, AlignSoft)
	}
	if opt.ScoreReference && opt.PrintAlignment != "" {
		return nil, fmt.Errorf("fairseqgen: --score-reference with --print-alignment: the scored references carry no attention here; leave out --print-alignment")
	}
	if opt.Tokenizer != "" && opt.Tokenizer != "moses" {
		return nil, fmt.Errorf("fairseqgen: --tokenizer %q: expected moses", opt.Tokenizer)
	}
	pair, err := fairseqdata.OpenPair(dataDir, opt.Subset, opt.SrcLang, opt.TgtLang, opt.DatasetImpl)
	if err != nil {
		return nil, err
	}
	if pair.Src.Len() == 0 {
		return nil, fmt.Errorf("fairseqgen: %s holds no sentences", pair.Src.Path)
	}
	if err := checkModel(tr, pair); err != nil {
		return nil, err
	}
	if opt.PrefixSize < 0 {
		return nil, fmt.Errorf("fairseqgen: --prefix-size %d: expected 0 or more", opt.PrefixSize)
	}
	if opt.PrefixSize > 0 && (pair.Tgt == nil || opt.ScoreReference) {
		return nil, fmt.Errorf("fairseqgen: --prefix-size %d: needs the target side of %s (%s) and no --score-reference", opt.PrefixSize, dataDir, pair.TgtLang)
	}
	if opt.ScoreReference && pair.Tgt == nil {
		return nil, fmt.Errorf("fairseqgen: --score-reference: %s has no target side (%s) to score", dataDir, pair.TgtLang)
	}
	seed := uint32(1)
	if opt.Seed != nil {
		seed = *opt.Seed
	}
	batches, err := pair.Batches(fairseqdata.BatchOptions{MaxTokens: opt.MaxTokens, MaxSentences: opt.BatchSize, Multiple: opt.Multiple, Seed: seed})
	if err != nil {
		return nil, err
	}
	g := &run{tr: tr, pair: pair, opt: opt, w: w}
	g.scoreDict = pair.TgtDict.Clone()
	g.scorer = NewBLEU(fairseqdata.Pad, fairseqdata.EOS, fairseqdata.Unk)
	if opt.Tokenizer == "moses" {
		g.detok = moses.NewDetokenizer(pair.TgtLang)
	}
	sum := &Summary{Sentences: pair.Src.Len(), Batches: len(batches), Impl: pair.Src.Impl, SrcLang: pair.SrcLang, TgtLang: pair.TgtLang}
	for _, b := range batches {
		n, err := g.batch(ctx, b)
		if err != nil {
			return nil, err
		}
		sum.Tokens += n
	}
	if pair.Tgt != nil {
		score, err := g.result()
		if err != nil {
			return nil, err
		}
		sum.Score = score
		beam := opt.Beam
		if beam == 0 {
			beam = 5
		}
		if _, err := fmt.Fprintf(w, "Generate %s with beam=%d: %s\n", opt.Subset, beam, score); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// checkModel refuses a model whose vocabularies are not the data-bin's
// dictionaries, or whose source rows are not fairseq's (ids then </s>).
func checkModel(tr *translate.Translator, p *fairseqdata.Pair) error {
	info := tr.Info()
	for _, side := range []struct {
		name string
		have []string
		dict *fairseqdata.Dictionary
		lang string
	}{{"source", info.SrcTokens, p.SrcDict, p.SrcLang}, {"target", info.TgtTokens, p.TgtDict, p.TgtLang}} {
		if side.have == nil {
			return fmt.Errorf("fairseqgen: the model directory's attnx.json holds no %s vocabulary, so its ids cannot be checked against dict.%s.txt", side.name, side.lang)
		}
		if len(side.have) != side.dict.Len() {
			return fmt.Errorf("fairseqgen: the model's %s vocabulary has %d entries and the data-bin's dict.%s.txt %d: binarized with another dictionary than the model was trained on", side.name, len(side.have), side.lang, side.dict.Len())
		}
		for i, s := range side.have {
			if s != side.dict.Symbols[i] {
				return fmt.Errorf("fairseqgen: id %d is %q in the model's %s vocabulary and %q in the data-bin's dict.%s.txt: binarized with another dictionary than the model was trained on", i, s, side.name, side.dict.Symbols[i], side.lang)
			}
		}
	}
	if len(info.SrcPrefix) != 0 || !slices.Equal(info.SrcSuffix, []int64{fairseqdata.EOS}) || info.Special.EOS != fairseqdata.EOS {
		return fmt.Errorf("fairseqgen: the model's source rows are %v ... %v with EOS %d, not fairseq's ids then </s> (2): export the fairseq checkpoint with attnx export", info.SrcPrefix, info.SrcSuffix, info.Special.EOS)
	}
	return nil
}

type run struct {
	tr        *translate.Translator
	pair      *fairseqdata.Pair
	opt       Options
	w         io.Writer
	scoreDict *fairseqdata.Dictionary
	scorer    *BLEU
	detok     *moses.Detokenizer
	refs      []string
	hyps      []string
}

// batch decodes one of fairseq's batches and writes its sentences in the
// collater's order; it returns the best hypotheses' tokens.
func (g *run) batch(ctx context.Context, ids []int) (int, error) {
	rows := make([][]int64, len(ids))
	width := 0
	for k, id := range ids {
		rows[k] = g.pair.Src.Item(id)
		width = max(width, len(rows[k]))
	}
	var res []translate.Result
	var err error
	if g.opt.ScoreReference {
		res, err = g.scoreReference(ctx, ids, rows)
	} else {
		res, err = g.decode(ctx, ids, rows, width)
	}
	if err != nil {
		return 0, fmt.Errorf("fairseqgen: batch of sentences %v: %w", ids, err)
	}
	tokens := 0
	var b strings.Builder
	for k, id := range ids {
		r := res[k]
		if len(r.Hypotheses) < min(g.opt.NBest, 1) {
			return 0, fmt.Errorf("fairseqgen: sentence %d: no hypothesis", id)
		}
		if len(r.Hypotheses) > 0 {
			tokens += len(r.Hypotheses[0].Tokens)
		}
		if err := g.sentence(&b, id, rows[k], width-len(rows[k]), r); err != nil {
			return 0, err
		}
	}
	_, err = io.WriteString(g.w, b.String())
	return tokens, err
}

// decode runs the search on a batch. fairseq's output limit follows the
// batch's width (its longest source, </s> included): when the
// Translator's limit depends on the length (--max-len-a), every row gets
// the width's.
func (g *run) decode(ctx context.Context, ids []int, rows [][]int64, width int) ([]translate.Result, error) {
	limit := g.tr.Limit(width)
	same := true
	for _, r := range rows {
		same = same && g.tr.Limit(len(r)) == limit
	}
	prefixes := g.prefixes(ids)
	if same && prefixes == nil {
		return g.tr.TranslateIDs(ctx, rows)
	}
	zero := 0.0
	return g.tr.TranslateIDsCall(ctx, rows, translate.CallOptions{MaxLen: limit, MaxLenA: &zero, Prefixes: prefixes})
}

// prefixes are the --prefix-size prefixes of sentences ids (nil without
// one): generate.py's sample["target"][:, :prefix_size], up to the
// reference's </s>.
func (g *run) prefixes(ids []int) [][]int64 {
	if g.opt.PrefixSize == 0 {
		return nil
	}
	out := make([][]int64, len(ids))
	for k, id := range ids {
		ref := g.pair.Tgt.Item(id)
		if n := len(ref); n > 0 && ref[n-1] == fairseqdata.EOS {
			ref = ref[:n-1]
		}
		out[k] = ref[:min(g.opt.PrefixSize, len(ref))]
	}
	return out
}

// scoreReference scores the references of sentences ids (sources rows)
// and returns each as a result of one hypothesis, the reference.
func (g *run) scoreReference(ctx context.Context, ids []int, rows [][]int64) ([]translate.Result, error) {
	refs := make([][]int64, len(ids))
	for k, id := range ids {
		refs[k] = g.pair.Tgt.Item(id)
	}
	scores, err := g.tr.ScoreIDs(ctx, rows, refs)
	if err != nil {
		return nil, err
	}
	res := make([]translate.Result, len(scores))
	for k, p := range scores {
		h := translate.Hypothesis{Tokens: p.Tokens, Score: p.Score, NormalizedScore: p.NormalizedScore, PositionalScores: p.PositionalScores}
		res[k] = translate.Result{Source: p.Source, Tokens: p.Tokens, Hypotheses: []translate.Hypothesis{h}}
	}
	return res, nil
}

// sentence writes sentence id's lines and scores its best hypothesis, as
// fairseq-generate's loop body does; pad is the padding fairseq's
// collater puts left of src in its batch.
func (g *run) sentence(b *strings.Builder, id int, src []int64, pad int, r translate.Result) error {
	pp := g.opt.PostProcess
	srcStr, err := g.pair.SrcDict.String(src, fairseqdata.StringOptions{PostProcess: pp})
	if err != nil {
		return err
	}
	var tgt []int64
	tgtStr := ""
	if g.pair.Tgt != nil {
		tgt = g.pair.Tgt.Item(id)
		if tgtStr, err = g.pair.TgtDict.String(tgt, fairseqdata.StringOptions{PostProcess: pp, EscapeUnk: true, Ignore: []int64{fairseqdata.EOS}}); err != nil {
			return err
		}
	}
	srcStr, tgtStr = g.decodeFn(srcStr), g.decodeFn(tgtStr)
	if !g.opt.Quiet {
		fmt.Fprintf(b, "S-%d\t%s\n", id, srcStr)
		if tgt != nil {
			fmt.Fprintf(b, "T-%d\t%s\n", id, tgtStr)
		}
	}
	hyps := r.Hypotheses
	if len(hyps) > g.opt.NBest {
		hyps = hyps[:g.opt.NBest]
	}
	for j, h := range hyps {
		hypStr, err := g.pair.TgtDict.String(h.Tokens, fairseqdata.StringOptions{PostProcess: pp, Ignore: []int64{fairseqdata.EOS}})
		if err != nil {
			return err
		}
		detok := g.decodeFn(hypStr)
		if !g.opt.Quiet {
			// hypo["score"] / math.log(2): a float32 tensor over a
			// Python float, divided in float32.
			score := outformat.PythonFloat(float64(h.NormalizedScore / float32(math.Ln2)))
			fmt.Fprintf(b, "H-%d\t%s\t%s\n", id, score, hypStr)
			fmt.Fprintf(b, "D-%d\t%s\t%s\n", id, score, detok)
			pos := make([]string, len(h.PositionalScores))
			for k, p := range h.PositionalScores {
				pos[k] = fmt.Sprintf("%.4f", float64(p/float32(math.Ln2)))
			}
			fmt.Fprintf(b, "P-%d\t%s\n", id, strings.Join(pos, " "))
			if g.opt.PrintAlignment != "" {
				a, err := Alignment(g.opt.PrintAlignment, h.Attention, r.Source, h.Tokens, pad)
				if err != nil {
					return fmt.Errorf("fairseqgen: sentence %d, hypothesis %d: %w", id, j+1, err)
				}
				fmt.Fprintf(b, "A-%d\t%s\n", id, a)
			}
		}
		if tgt == nil || j > 0 {
			continue
		}
		switch {
		case g.opt.Scoring == ScoringSacreBLEU:
			g.refs = append(g.refs, tgtStr)
			g.hyps = append(g.hyps, detok)
		case pp != "":
			// Without BPE the printed lines are encoded again, words
			// added to the dictionary: the reference first, then the
			// hypothesis.
			ref := g.scoreDict.Encode(tgtStr, true, true)
			g.scorer.Add(ref, g.scoreDict.Encode(detok, true, true))
		default:
			g.scorer.Add(tgt, h.Tokens)
		}
	}
	return nil
}

// decodeFn is fairseq-generate's decode_fn: --bpe's decoding, then
// --tokenizer's.
func (g *run) decodeFn(x string) string {
	if g.opt.BPE != "" {
		// subword_nmt's and sentencepiece's decode are post_process's
		// of the same name; Generate checked the name.
		x, _ = fairseqdata.PostProcess(x, g.opt.BPE)
	}
	if g.detok != nil {
		x = g.detok.Detokenize(fairseqdata.SplitLine(x))
	}
	return x
}

// result is the scorer's result string.
func (g *run) result() (string, error) {
	if g.opt.Scoring != ScoringSacreBLEU {
		return g.scorer.String(), nil
	}
	s, err := mtscore.BLEU(g.hyps, [][]string{g.refs}, mtscore.BLEUOptions{})
	if err != nil {
		return "", fmt.Errorf("fairseqgen: sacreBLEU: %w", err)
	}
	// sacreBLEU's BLEUScore.format() without a signature.
	return fmt.Sprintf("BLEU = %.2f %s", s.Score, s.Verbose()), nil
}
