// Package subword holds the subword tokenizers that toolkit models are
// trained with, in Go: SentencePiece models (unigram, BPE, word and char
// model types, with their normalisation rules and byte fallback),
// subword-nmt's BPE codes, and the word normalisation of PyTorch's chatbot
// tutorial. Each segments raw text into the pieces a model's
// vocabulary holds and joins output pieces back into text, exactly as the
// original tool does; the tests compare every piece with SentencePiece's
// own tools and with subword-nmt's outputs.
package subword
