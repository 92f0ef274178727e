package onmttok

import (
	"strings"

	"github.com/attnx/attnx/internal/wordcache"
)

// PieceEncoder segments text into SentencePiece pieces ("▁" marking a
// space): package subword's SentencePiece.
type PieceEncoder interface {
	// Encode returns the pieces of text.
	Encode(text string) []string
}

// SentencePiece applies a SentencePiece model to each token after the
// Tokenizer's own tokenization, as pyonmttok with sp_model_path does; has
// tells whether the model has a piece (for Produces).
func SentencePiece(e PieceEncoder, has func(piece string) bool) Subword {
	return spSubword{e, has, wordcache.New(wordcache.Bytes)}
}

type spSubword struct {
	e     PieceEncoder
	has   func(string) bool
	cache *wordcache.Cache // a token's pieces
}

func (s spSubword) encode(text string) []string {
	if p, ok := s.cache.Get(text); ok {
		return p
	}
	p := s.e.Encode(text)
	s.cache.Add(text, p)
	return p
}

func (s spSubword) produces(core string) bool {
	return s.has(core) || s.has(SpacerMarker+core)
}

// adjust: with mode none and no annotation the Tokenizer behaves as
// spm_encode (spacer annotation, no substitution).
func (s spSubword) adjust(o *resolved) {
	if o.mode == modeNone && !o.JoinerAnnotate && !o.SpacerAnnotate {
		o.SpacerAnnotate = true
		o.NoSubstitution = true
	}
}

func (s spSubword) annotate(t token, out []token) []token {
	pieces := s.encode(t.surface)
	first := len(out)
	spaceNext := false
	for _, p := range pieces {
		if strings.HasPrefix(p, SpacerMarker) {
			if len(p) == len(SpacerMarker) {
				spaceNext = true // a lone spacer marks the next piece
				continue
			}
			out = append(out, token{surface: p[len(SpacerMarker):], spacer: true})
			continue
		}
		sub := token{surface: p}
		if spaceNext {
			sub.spacer, sub.preserve = true, true
			spaceNext = false
		} else if len(out) > first {
			sub.joinLeft = true
		}
		out = append(out, sub)
	}
	if len(out) == first { // no pieces, or only spacers: the token as it is
		return append(out, t)
	}
	toks := out[first:]
	head, last := &toks[0], &toks[len(toks)-1]
	head.joinLeft = t.joinLeft
	last.joinRight = t.joinRight
	if t.joinLeft && t.preserve {
		head.preserve = true
	}
	if t.joinRight && t.preserve {
		last.preserve = true
	}
	propagate(t, toks)
	return out
}
