package translate

// unkSources are the source tokens that replace_unk writes in place of an
// output <unk>, by source position: what the model's release of its
// toolkit writes. OpenNMT-py 2.x (onmt/translate/translation.py of 2.3.0)
// takes the example's raw source word at the attention's argmax, so a
// copy-attention model's word outside the source vocabulary comes out as
// the word (words holds the row's own such words: Sources.Words); 3.x
// (3.5.1) looks the source id up in the source vocabulary, so such a word
// comes out as the vocabulary's <unk>, and so do fairseq and attnx's own
// rules. enc is the row as the encoder sees it (encoderRow) and
// sourceTokens its sourceWords; both releases take the copy attention of
// a copy-attention model, which is the attention the searches record.
func (t *Translator) unkSources(enc []int64, sourceTokens []string, so searchOpts) []string {
	if so.openNMT && so.onmt2 {
		return sourceTokens
	}
	return t.src.strings(enc)
}
