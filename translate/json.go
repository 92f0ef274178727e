package translate

// ResultJSON is the JSON form of one result: one line of
// `attnx translate --json` and one element of the "results" of
// `attnx serve`'s POST /v1/translate.
type ResultJSON struct {
	// Input is the input as the caller gave it: the text, or the source
	// token ids joined with spaces.
	Input string `json:"input"`
	// SourceIDs holds the source token ids that were translated.
	SourceIDs []int64 `json:"source_ids"`
	// Tokens holds the output token ids, EOS included when it was emitted.
	Tokens []int64 `json:"tokens"`
	// Text is the output as text ("" when the target vocabulary is
	// unknown).
	Text string `json:"text"`
	// Attention holds one row per output token, each with one weight per
	// source token.
	Attention [][]float32 `json:"attention"`
}

// JSON returns r's JSON form, input being the input as the caller gave it.
func (r Result) JSON(input string) ResultJSON {
	return ResultJSON{Input: input, SourceIDs: r.Source, Tokens: r.Tokens, Text: r.Text, Attention: r.Attention}
}

// TargetText returns ids as text, as Result.Text is made: "" when the
// target vocabulary is unknown.
func (t *Translator) TargetText(ids []int64) string { return t.tgt.text(ids) }
