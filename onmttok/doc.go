// Package onmttok is the OpenNMT Tokenizer (pyonmttok, what OpenNMT-py's
// onmt_tokenize transform runs) in Go: its tokenization modes, joiner and
// spacer annotation, case markup, segmentation rules, placeholders, its
// BPE and its SentencePiece integration, and its detokenization. Its
// output is the Tokenizer 1.37.1's piece for piece on the committed test
// texts (testdata/, made by pyonmttok itself).
//
// Character classes (general categories, scripts, case mappings) come
// from Go's unicode package, which has the same Unicode version as the ICU
// the Tokenizer was checked with; the script extensions of common
// characters, which Go lacks, are generated from ICU (go generate). With
// a lang, tokens are lowercased, uppercased and titlecased as ICU 72 does
// it for that locale (Turkish and Azeri i, Lithuanian dot above, Greek
// uppercasing, Dutch IJ, Armenian ech-yiwn, full mappings and final
// sigma), from case properties and full mappings generated from ICU too.
package onmttok
