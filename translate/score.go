package translate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/attnx/attnx/decode"
)

// PairScore is the score of one given translation of a source: the
// model's log-probability of the reference under teacher forcing, one
// pass of decoder.onnx fed the reference's tokens (no search), as
// OpenNMT-py's onmt_translate -tgt (its GOLD SCORE), fairseq-generate
// --score-reference and JoeyNMT's return_prob: ref score it. Its JSON is
// what attnx serve answers to POST /v1/score.
type PairScore struct {
	// Source holds the source token ids the encoder read.
	Source []int64 `json:"source_ids"`
	// Tokens holds the reference's target ids, EOS last; a piece outside
	// the target vocabulary is its unknown token, as the toolkits map it.
	// OutputTokens are their pieces.
	Tokens       []int64  `json:"tokens"`
	OutputTokens []string `json:"output_tokens,omitempty"`
	// PositionalScores holds each token's log-prob (natural log), EOS's
	// included.
	PositionalScores []float32 `json:"positional_scores"`
	// BatchReferenceLength is the longest reference, EOS included, of
	// the batch the toolkit's translate command puts the pair in
	// (attnx.json's defaults.batching; 0 without): onmt_translate
	// 3.5.1's GOLD line shows the reference padded to it.
	BatchReferenceLength int `json:"batch_reference_length,omitempty"`
	// Score is their float32 sum: OpenNMT-py's GOLD SCORE.
	// NormalizedScore is the score the rules' toolkit reports for the
	// pair: under OpenNMT-py's rules the sum; under fairseq's the mean
	// over the tokens (SequenceScorer's, which fairseq-generate prints in
	// base 2); under JoeyNMT's the sum (its return_prob: ref reports the
	// tokens' scores alone); under attnx's own the spec's normalisation,
	// Score / len ** LengthPenalty.
	Score           float32 `json:"score"`
	NormalizedScore float32 `json:"normalized_score"`
}

// Score scores each given translation tgt[i] of src[i] (text, tokenised
// with the target side's tokenizer or vocabulary as Translate tokenises
// the source side, or pieces with Options.Pretokenized) in batches of
// Options.BatchSize pairs, each batch one encoder run and one decoder run
// per reference token, on the steps engine whatever Options.Engine says.
// A pair whose source is blank gets the zero PairScore; a blank
// reference is scored as EOS alone. A source that cannot be translated,
// or a reference with a piece outside the target vocabulary of a model
// without an unknown token, fails the call before anything runs with an
// *InputError naming the row.
func (t *Translator) Score(ctx context.Context, src, tgt []string) ([]PairScore, error) {
	if len(src) != len(tgt) {
		return nil, &RequestError{Row: min(len(src), len(tgt)), Err: fmt.Errorf("translate: Score: %d sources and %d references: want one reference per source", len(src), len(tgt))}
	}
	if !t.tgt.known() {
		return nil, &RequestError{Row: -1, Err: fmt.Errorf("translate: Score: %s has no target vocabulary to read references with", filepath.Join(t.dir, "attnx.json"))}
	}
	var idx []int
	var srcKept, tgtKept []string
	for i := range src {
		if !blank(src[i]) {
			idx = append(idx, i)
			srcKept, tgtKept = append(srcKept, src[i]), append(tgtKept, tgt[i])
		}
	}
	sources, err := t.encodeTexts(ctx, srcKept)
	if err != nil {
		return nil, rowOf(err, idx)
	}
	refs := make([][]int64, len(tgtKept))
	for k, s := range tgtKept {
		if refs[k], err = t.encodeReference(idx[k], s); err != nil {
			return nil, err
		}
	}
	scored, err := t.scoreRows(ctx, sources, refs)
	if err != nil {
		return nil, rowOf(err, idx)
	}
	out := make([]PairScore, len(src))
	for k, i := range idx {
		out[i] = scored[k]
	}
	return out, nil
}

// ScoreIDs scores references (target ids, EOS last where the toolkit
// scores it: a fairseq data-bin's items end with it) of sources (source
// ids, as TranslateIDs takes them) as Score does. Every row is checked
// before anything runs: a reference must not be empty and its ids must
// lie in the target vocabulary.
func (t *Translator) ScoreIDs(ctx context.Context, sources, references [][]int64) ([]PairScore, error) {
	if len(sources) != len(references) {
		return nil, &RequestError{Row: min(len(sources), len(references)), Err: fmt.Errorf("translate: ScoreIDs: %d sources and %d references: want one reference per source", len(sources), len(references))}
	}
	vt := int64(t.info.TgtVocab)
	for i, ref := range references {
		if len(ref) == 0 {
			return nil, &InputError{Row: i, Position: -1, Msg: "empty reference: want its target ids, EOS included"}
		}
		for j, id := range ref {
			if id < 0 || id >= vt {
				return nil, &InputError{Row: i, Position: j, Msg: fmt.Sprintf("reference id %d at position %d: want 0 to %d (the target vocabulary)", id, j, vt-1)}
			}
		}
	}
	return t.scoreRows(ctx, Sources{Rows: sources}, references)
}

// scoreRows scores refs of sources in batches of BatchSize on the steps
// engine, each row fed its reference (decode.Forced).
func (t *Translator) scoreRows(ctx context.Context, sources Sources, refs [][]int64) ([]PairScore, error) {
	release, err := t.acquire(sources)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := t.errEnsemble("scoring given translations (Score)"); err != nil {
		return nil, err
	}
	if _, err := t.stepsPool(); err != nil {
		return nil, err
	}
	so := t.searchOptions()
	out := make([]PairScore, len(refs))
	if d := t.info.Defaults; d != nil && d.Batching != nil {
		for _, batch := range toolkitBatches(sources.Rows, d.Batching) {
			longest := 0
			for _, k := range batch {
				longest = max(longest, len(refs[k]))
			}
			for _, k := range batch {
				out[k].BatchReferenceLength = longest
			}
		}
	}
	bs := t.batchSize()
	for start := 0; start < len(refs); start += bs {
		end := min(start+bs, len(refs))
		batch := sources.part(start, end)
		fs := make([]decode.Forced, end-start)
		ss := make([]decode.Search, len(fs))
		for r := range fs {
			fs[r] = decode.Forced{SOS: t.info.Special.SOS, Tokens: refs[start+r], Copy: t.copyMap(batch.Rows[r], batch.rowWords(r))}
			ss[r] = &fs[r]
		}
		if err := t.decodeSteps(ctx, t.encoderRows(batch.Rows), 1, ss); err != nil {
			return nil, err
		}
		for r := range fs {
			p := &out[start+r]
			p.Source = append([]int64(nil), t.encoderRow(batch.Rows[r])...)
			p.Tokens = refs[start+r]
			if t.tgt.known() {
				p.OutputTokens = t.tgt.strings(refs[start+r])
			}
			p.PositionalScores = append([]float32(nil), fs[r].Scores()...)
			for _, x := range p.PositionalScores {
				p.Score += x
			}
			p.NormalizedScore = pairNormalized(so, p.Score, len(p.Tokens))
		}
	}
	return out, nil
}

// pairNormalized is the score the rules' toolkit reports for a
// reference of n tokens scoring score (PairScore.NormalizedScore).
func pairNormalized(so searchOpts, score float32, n int) float32 {
	switch {
	case so.openNMT, so.joey:
		return score
	case so.fairseq:
		return score / float32(n)
	}
	return decode.Normalize(score, n, so.alpha, so.wu)
}

// encodeReference tokenises reference text s (row) into target ids with
// EOS appended.
func (t *Translator) encodeReference(row int, s string) ([]int64, error) {
	eos := t.info.Special.EOS
	if eos < 0 {
		return nil, &RequestError{Row: -1, Err: fmt.Errorf("translate: Score: %s has no EOS token to end a reference with", filepath.Join(t.dir, "attnx.json"))}
	}
	if blank(s) {
		return []int64{eos}, nil
	}
	ids, err := t.tgt.encode(row, s, t.tgtUNK >= 0, t.tgtUNK, nil, t.opt.Pretokenized, nil)
	if err != nil {
		return nil, err
	}
	return append(ids, eos), nil
}

// rowOf renumbers an *InputError's row from kept (the rows that went in)
// to the call's.
func rowOf(err error, kept []int) error {
	var ie *InputError
	if errors.As(err, &ie) && ie.Row >= 0 && ie.Row < len(kept) {
		ie.Row = kept[ie.Row]
	}
	return err
}
