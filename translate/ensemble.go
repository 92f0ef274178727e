package translate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/subword"
)

// EnsembleOptions are the settings of an ensemble beside each member's
// Options.
type EnsembleOptions struct {
	// AvgRawProbs combines the members as OpenNMT-py's -avg_raw_probs
	// does: the log of the mean of their probabilities, in place of the
	// mean of their log-probs. It is for the spec's and OpenNMT-py's
	// rules; fairseq's ensembles have one rule (logsumexp minus log N).
	AvgRawProbs bool
}

// ensemble is what an ensemble's Translator (its first member's) keeps of
// the others.
type ensemble struct {
	members []*Translator // the 2nd..Nth members
	combine decode.Combine
}

// OpenEnsemble opens the model directories dirs as one ensemble, as
// onmt_translate -model A B and fairseq's --path A:B decode: one search,
// every step running each member's decoder on the same hypotheses (each
// member's states reordered with the same beam indices) and ranking
// their log-probs combined by the rules' toolkit: under RulesFairseq,
// logsumexp minus log N; else their mean, or with AvgRawProbs the log of
// their mean probability (OpenNMT-py). The attention (for ReplaceUnk and
// alignments) is the members' mean. The members must share the source
// and target vocabularies, the special tokens, the tokenizers and the
// toolkit's rules; the first member's attnx.json gives every other
// setting. An ensemble decodes on the steps engine with every search but
// fairseq's --temperature (applied there to each member's logits before
// combining); it refuses the loop engine, copy models, Score and
// continuous batching (NewScheduler). One directory opens as Open does.
func OpenEnsemble(dirs []string, opt Options, eo EnsembleOptions) (*Translator, error) {
	switch len(dirs) {
	case 0:
		return nil, errors.New("translate: an ensemble needs at least one model directory")
	case 1:
		if eo.AvgRawProbs {
			return nil, optionErrorf("AvgRawProbs", "translate: AvgRawProbs combines the members of an ensemble; %s is one model", dirs[0])
		}
		return Open(dirs[0], opt)
	}
	if opt.Engine == EngineLoop {
		return nil, optionErrorf("Engine", "translate: an ensemble decodes on the %q engine only (each step combines the members' log-probs in Go), not %q", EngineSteps, EngineLoop)
	}
	opt.Engine = EngineSteps
	var ts []*Translator
	fail := func(err error) (*Translator, error) {
		for _, t := range ts {
			t.Close()
		}
		return nil, err
	}
	for _, dir := range dirs {
		t, err := Open(dir, opt)
		if err != nil {
			return fail(err)
		}
		ts = append(ts, t)
		if t.copy {
			return fail(fmt.Errorf("translate: %s has copy attention, which an ensemble does not decode (each member's vocabulary is extended per sentence)", dir))
		}
	}
	first := ts[0]
	for _, t := range ts[1:] {
		if err := sameVocabularies(first, t); err != nil {
			return fail(err)
		}
	}
	rules := first.searchOptions()
	e := &ensemble{members: ts[1:]}
	switch {
	case rules.fairseq && eo.AvgRawProbs:
		return fail(optionErrorf("AvgRawProbs", "translate: AvgRawProbs is OpenNMT-py's -avg_raw_probs; under Rules %q an ensemble combines as fairseq does (logsumexp minus log N)", RulesFairseq))
	case rules.fairseq:
		e.combine = decode.LogSumExpMinusLogN
	case rules.openNMT && !first.onmtV2() && eo.AvgRawProbs:
		return fail(optionErrorf("AvgRawProbs", "translate: AvgRawProbs: OpenNMT-py 3.x's -avg_raw_probs takes log(mean(exp(logits))) over the members' raw logits before its log_softmax, which weighs each member by its softmax normalizer; an exported decoder gives log-probs, without that normalizer, so attnx does not decode it (it does under OpenNMT-py 2.x's rules, whose generators end in LogSoftmax)"))
	case eo.AvgRawProbs:
		e.combine = decode.LogMeanProbs
	case rules.openNMT && !first.onmtV2():
		e.combine = decode.LogSoftmaxOfMean
	default:
		e.combine = decode.MeanLogProbs
	}
	first.ens = e
	first.notes = append(first.notes, fmt.Sprintf("an ensemble of %d models combined by the %v", len(dirs), e.combine))
	return first, nil
}

// sameVocabularies checks that member b reads and writes the tokens a does:
// the vocabularies, the special tokens, the tokenizers (their settings and
// their files' bytes) and the toolkit's rules; the error names what differs.
func sameVocabularies(a, b *Translator) error {
	differ := func(what string) error {
		return fmt.Errorf("translate: ensemble members %s and %s have different %s: members must share it", a.dir, b.dir, what)
	}
	ai, bi := a.info, b.info
	switch {
	case !slices.Equal(ai.TgtTokens, bi.TgtTokens) || ai.TgtVocab != bi.TgtVocab:
		return differ(fmt.Sprintf("target vocabularies (%d and %d tokens)", ai.TgtVocab, bi.TgtVocab))
	case !slices.Equal(ai.SrcTokens, bi.SrcTokens):
		return differ(fmt.Sprintf("source vocabularies (%d and %d tokens)", len(ai.SrcTokens), len(bi.SrcTokens)))
	case ai.Special != bi.Special:
		return differ(fmt.Sprintf("special tokens (%+v and %+v)", ai.Special, bi.Special))
	}
	if err := sameTokenizer(a.dir, b.dir, ai.SrcTokenizer, bi.SrcTokenizer); err != nil {
		return differ("source tokenizers (" + err.Error() + ")")
	}
	if err := sameTokenizer(a.dir, b.dir, ai.TgtTokenizer, bi.TgtTokenizer); err != nil {
		return differ("target tokenizers (" + err.Error() + ")")
	}
	if ar, br := a.searchOptions().rulesName(), b.searchOptions().rulesName(); ar != br {
		return differ(fmt.Sprintf("decoding rules (%q and %q)", ar, br))
	}
	return nil
}

// sameTokenizer reports how two tokenizer specs of directories da and db
// differ: in a setting or in their file's content; nil when they do not.
func sameTokenizer(da, db string, a, b *subword.Spec) error {
	if a == nil || b == nil {
		if a != b {
			return errors.New("one has none")
		}
		return nil
	}
	ac, bc := *a, *b
	ac.File, bc.File = "", ""
	if fmt.Sprintf("%+v", ac) != fmt.Sprintf("%+v", bc) {
		return fmt.Errorf("%s and %s", a.Kind, b.Kind)
	}
	if a.File == "" && b.File == "" {
		return nil
	}
	fa, err := os.ReadFile(filepath.Join(da, a.File))
	if err != nil {
		return err
	}
	fb, err := os.ReadFile(filepath.Join(db, b.File))
	if err != nil {
		return err
	}
	if !bytes.Equal(fa, fb) {
		return fmt.Errorf("files %s and %s differ", a.File, b.File)
	}
	return nil
}

// Members returns the model directories of the ensemble, the first
// member's first; one for a single model.
func (t *Translator) Members() []string {
	dirs := []string{t.dir}
	if t.ens != nil {
		for _, m := range t.ens.members {
			dirs = append(dirs, m.dir)
		}
	}
	return dirs
}

// checkEnsembleSearch refuses what an ensemble does not decode: fairseq's
// temperature, which fairseq applies to each member's logits before
// combining.
func (t *Translator) checkEnsembleSearch(so searchOpts) error {
	if t.ens == nil {
		return nil
	}
	if so.fairseq && so.temp != 0 && so.temp != 1 {
		return optionErrorf("Temperature", "translate: Temperature %v: fairseq divides each ensemble member's logits by it before combining them, which an ensemble of exported models (their log-probs) cannot do", so.temp)
	}
	return nil
}

// errEnsemble refuses an operation an ensemble does not do.
func (t *Translator) errEnsemble(what string) error {
	if t.ens == nil {
		return nil
	}
	return fmt.Errorf("translate: %s is not done for an ensemble (%d models); open one model directory for it", what, len(t.ens.members)+1)
}

// decodeEnsemble decodes rows with their searches on one executor of
// each member's pool, sized for width slots per row, combined in one
// decode.Batch.
func (t *Translator) decodeEnsemble(ctx context.Context, rows [][]int64, width int, searches []decode.Search) error {
	slots, cells := width*len(rows), width*len(rows)*maxLen(rows)
	members := append([]*Translator{t}, t.ens.members...)
	exs := make([]*decode.Executor, 0, len(members))
	giveBack := func(discard bool) {
		for i, ex := range exs {
			if discard {
				members[i].pool.discard(ex)
			} else {
				members[i].pool.put(ex)
			}
		}
	}
	for _, m := range members {
		ex, err := m.pool.get(ctx, slots, cells)
		if err != nil {
			giveBack(false)
			return err
		}
		exs = append(exs, ex)
	}
	b, err := decode.NewEnsembleBatch(exs, t.ens.combine)
	if err == nil {
		if err = ctx.Err(); err == nil {
			if err = b.Add(rows, searches); err == nil {
				err = b.Run(ctx)
			}
		}
	}
	// Do not keep buffers ONNX Runtime has complained about.
	giveBack(err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded))
	return err
}

// closeMembers closes the other members of an ensemble.
func (t *Translator) closeMembers() error {
	if t.ens == nil {
		return nil
	}
	var errs []error
	for _, m := range t.ens.members {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}
