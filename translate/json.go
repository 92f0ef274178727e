package translate

import (
	"context"

	"github.com/attnx/attnx/subword"
)

// ResultJSON is the JSON form of one result: one line of
// `attnx translate --json` and one element of the "results" of
// `attnx serve`'s POST /v1/translate.
type ResultJSON struct {
	// Input is the input as the caller gave it: the text, or the source
	// token ids joined with spaces.
	Input string `json:"input"`
	// SourceIDs holds the source token ids that were translated, and
	// SourceTokens the same as strings: the vocabulary's pieces, what the
	// attention's columns stand for.
	SourceIDs    []int64  `json:"source_ids"`
	SourceTokens []string `json:"source_tokens,omitempty"`
	// Tokens holds the output token ids, EOS included when it was emitted.
	Tokens []int64 `json:"tokens"`
	// OutputTokens holds the output tokens as strings (its pieces, the
	// attention's rows), absent when the target vocabulary is unknown.
	OutputTokens []string `json:"output_tokens,omitempty"`
	// Text is the output as text ("" when the target vocabulary is
	// unknown).
	Text string `json:"text"`
	// Attention holds one row per output token, each with one weight per
	// source token; absent when it was not asked for (attnx serve answers
	// it only to requests with "attention": true).
	Attention [][]float32 `json:"attention,omitempty"`
	// Alignment is the first hypothesis' hard alignment, [source
	// position, output position] pairs (Result.Alignment); absent where
	// the search recorded no attention.
	Alignment [][2]int `json:"alignment,omitempty"`
	// Hypotheses is the n-best list, best first: beam search's, or
	// greedy decoding's one hypothesis; Tokens, Text and Attention are
	// the first one's. Absent only for a blank line, which is not
	// decoded.
	Hypotheses []HypothesisJSON `json:"hypotheses,omitempty"`
	// Score, NormalizedScore and PositionalScores are the first
	// hypothesis' (Result.Score), whatever the search; absent with
	// Hypotheses.
	Score            *float32  `json:"score,omitempty"`
	NormalizedScore  *float32  `json:"normalized_score,omitempty"`
	PositionalScores []float32 `json:"positional_scores,omitempty"`
	// ScoreBase says the scores' logarithm base: "e", natural (fairseq
	// prints base 2: attnx translate --format fairseq converts); set with
	// Hypotheses.
	ScoreBase string `json:"score_base,omitempty"`
}

// HypothesisJSON is the JSON form of one beam search hypothesis.
type HypothesisJSON struct {
	// Tokens holds the output token ids, EOS included when it was emitted;
	// Text is as in ResultJSON.
	Tokens []int64 `json:"tokens"`
	// OutputTokens holds the tokens as strings, the vocabulary's pieces.
	OutputTokens []string `json:"output_tokens,omitempty"`
	Text         string   `json:"text"`
	// Score is the raw sum of the tokens' log-probabilities;
	// NormalizedScore is what the list is ordered by (score / length **
	// alpha under the spec's rules; Hypothesis.NormalizedScore).
	// PositionalScores holds each token's log-probability where the search
	// records them (greedy decoding, fairseq's rules), else it is absent.
	Score            float32   `json:"score"`
	NormalizedScore  float32   `json:"normalized_score"`
	PositionalScores []float32 `json:"positional_scores,omitempty"`
	// Alignment is the hypothesis' hard alignment, as in ResultJSON.
	Alignment [][2]int `json:"alignment,omitempty"`
}

// JSON returns r's JSON form, input being the input as the caller gave it.
func (r Result) JSON(input string) ResultJSON {
	j := ResultJSON{Input: input, SourceIDs: r.Source, SourceTokens: r.SourceTokens, Tokens: r.Tokens, OutputTokens: r.OutputTokens,
		Text: r.Text, Attention: r.Attention, Alignment: alignmentJSON(r.Alignment)}
	for _, h := range r.Hypotheses {
		j.Hypotheses = append(j.Hypotheses, HypothesisJSON{Tokens: h.Tokens, OutputTokens: h.OutputTokens, Text: h.Text, Score: h.Score, NormalizedScore: h.NormalizedScore,
			PositionalScores: h.PositionalScores, Alignment: alignmentJSON(h.Alignment)})
	}
	if len(j.Hypotheses) > 0 {
		score, norm := r.Score, r.NormalizedScore
		j.Score, j.NormalizedScore, j.PositionalScores = &score, &norm, r.PositionalScores
		j.ScoreBase = "e"
	}
	// A blank line's result has no ids: empty lists, not null.
	if j.SourceIDs == nil {
		j.SourceIDs = []int64{}
	}
	if j.Tokens == nil {
		j.Tokens = []int64{}
	}
	return j
}

// TargetText returns ids as text, as Result.Text is made: "" when the
// target vocabulary is unknown.
func (t *Translator) TargetText(ids []int64) string { return t.tgt.text(ids) }

// UnknownPieces is how many source pieces of the text inputs translated so
// far were not in the source vocabulary and went in as the UNK token
// (Options.UnknownToUNK, or a model with a subword tokenizer).
func (t *Translator) UnknownPieces() int64 { return t.unknownPieces.Load() }

// HasTokenizer reports whether the model segments text with a subword
// tokenizer (attnx.json's src_tokenizer).
func (t *Translator) HasTokenizer() bool { return t.src.tok != nil }

// TokenizerCache returns the counts of the source tokenizer's cache of
// segmented words (zero for a tokenizer without one).
func (t *Translator) TokenizerCache() subword.CacheStats {
	if c, ok := t.src.tok.(interface{ CacheStats() subword.CacheStats }); ok {
		return c.CacheStats()
	}
	return subword.CacheStats{}
}

// Tokenize tokenises texts as Translate does (the model's tokenizer or
// vocabulary, and attnx.json's src_prefix and src_suffix): the source rows
// the decoder sees, with a copy-attention model's words outside the
// vocabulary (Sources), which TranslateSources then decodes exactly as
// Translate would the texts. A server makes its memory estimate and length
// limits from them, since a tokenizer may give several pieces per
// character (SentencePiece's NFKC turns U+FDFA into 8). It checks ctx
// before each text and returns ctx.Err() when it is done; pretokenized
// takes the texts as source pieces already, as Options.Pretokenized does,
// for this call. A text that cannot be tokenised is an *InputError naming
// its row.
func (t *Translator) Tokenize(ctx context.Context, texts []string, pretokenized bool) (Sources, error) {
	return t.encodeTextsAs(ctx, texts, pretokenized)
}

// SourceRows tokenises texts as Translate does: Tokenize's rows as the
// encoder sees them, a copy-attention model's words outside the source
// vocabulary as its unknown token (its own words need Tokenize's Sources).
// TranslateIDs decodes them as Translate would the texts, except for
// what such a model copies.
func (t *Translator) SourceRows(texts []string) ([][]int64, error) {
	return t.SourceRowsContext(context.Background(), texts, false)
}

// SourceRowsContext is SourceRows stopping at ctx's end, as Tokenize does.
// pretokenized takes the texts as source pieces already, as
// Options.Pretokenized does, for this call.
func (t *Translator) SourceRowsContext(ctx context.Context, texts []string, pretokenized bool) ([][]int64, error) {
	src, err := t.encodeTextsAs(ctx, texts, pretokenized)
	if err != nil {
		return nil, err
	}
	return t.encoderRows(src.Rows), nil
}

// SourceIDs tokenises one text as SourceRows does: the source row the
// encoder sees.
func (t *Translator) SourceIDs(text string) ([]int64, error) {
	rows, err := t.SourceRows([]string{text})
	if err != nil {
		return nil, err
	}
	return rows[0], nil
}
