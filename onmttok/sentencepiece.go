package onmttok

import "strings"

// PieceEncoder segments text into SentencePiece pieces ("▁" marking a
// space): package subword's SentencePiece.
type PieceEncoder interface {
	Encode(text string) []string
}

// SentencePiece applies a SentencePiece model to each token after the
// Tokenizer's own tokenization, as pyonmttok with sp_model_path does; has
// tells whether the model has a piece (for Produces).
func SentencePiece(e PieceEncoder, has func(piece string) bool) Subword { return spSubword{e, has} }

type spSubword struct {
	e   PieceEncoder
	has func(string) bool
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

func (s spSubword) annotate(t token) []token {
	pieces := s.e.Encode(t.surface)
	if len(pieces) == 0 {
		return []token{t}
	}
	toks := make([]token, 0, len(pieces))
	spaceNext := false
	for _, p := range pieces {
		if strings.HasPrefix(p, SpacerMarker) {
			if len(p) == len(SpacerMarker) {
				spaceNext = true // a lone spacer marks the next piece
				continue
			}
			toks = append(toks, token{surface: p[len(SpacerMarker):], spacer: true})
			continue
		}
		sub := token{surface: p}
		if spaceNext {
			sub.spacer, sub.preserve = true, true
			spaceNext = false
		} else if len(toks) > 0 {
			sub.joinLeft = true
		}
		toks = append(toks, sub)
	}
	if len(toks) == 0 { // only spacers
		return []token{t}
	}
	first, last := &toks[0], &toks[len(toks)-1]
	first.joinLeft = t.joinLeft
	last.joinRight = t.joinRight
	if t.joinLeft && t.preserve {
		first.preserve = true
	}
	if t.joinRight && t.preserve {
		last.preserve = true
	}
	propagate(t, toks)
	return toks
}
