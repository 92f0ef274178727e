package onmttok

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/internal/wordcache"
)

// Subword segments one token's text into pieces, as the Tokenizer's
// subword encoders do; BPE is this package's, and a SentencePiece model
// comes wrapped by SentencePiece.
type Subword interface {
	// annotate appends a token's pieces to out.
	annotate(t token, out []token) []token
	// adjust changes the options as the encoder's
	// update_tokenization_options does.
	adjust(o *resolved)
	// produces tells whether a piece (its joiners or spacer removed) can
	// come out of the model.
	produces(core string) bool
}

// Tokenizer is the OpenNMT Tokenizer with its options and optional
// subword model. It is safe for concurrent use.
type Tokenizer struct {
	o       resolved
	subword Subword
}

// New makes a Tokenizer, checking the options as pyonmttok does (with its
// messages); subword may be nil.
func New(o Options, subword Subword) (*Tokenizer, error) {
	r, err := o.validate()
	if err != nil {
		return nil, err
	}
	if subword != nil {
		subword.adjust(&r)
	}
	return &Tokenizer{o: r, subword: subword}, nil
}

// Options returns the options in effect (the defaults filled in, and what
// the subword model changes).
func (t *Tokenizer) Options() Options { return t.o.Options }

// Tokenize splits text into tokens, as pyonmttok's Tokenizer called on it.
func (t *Tokenizer) Tokenize(text string) []string {
	return t.finalize(t.annotated(text))
}

func (t *Tokenizer) annotated(text string) []token {
	if text == "" {
		return nil
	}
	var toks []token
	if t.o.mode == modeNone || t.o.mode == modeSpace {
		toks = t.tokenizeOnPlaceholders(text)
	} else {
		toks = t.tokenizeText(text)
	}
	if t.o.CaseMarkup {
		for i := range toks {
			if !toks[i].isPlaceholder() {
				toks[i].surface, toks[i].casing = lowercaseToken(toks[i].surface, t.o.Lang)
			}
		}
	}
	if t.subword != nil {
		out := make([]token, 0, 2*len(toks))
		for _, tk := range toks {
			if tk.isPlaceholder() {
				out = append(out, tk)
				continue
			}
			out = t.subword.annotate(tk, out)
		}
		toks = out
	}
	return toks
}

func (t *Tokenizer) tokenizeOnPlaceholders(text string) []token {
	pooled := charPool.Get().(*[]char)
	cs := chars(text, (*pooled)[:0])
	defer func() { *pooled = cs[:0]; charPool.Put(pooled) }()
	b := &builder{noSubstitution: t.o.NoSubstitution, text: text}
	inPlaceholder, inFeatures := false, false
	for i, c := range cs {
		if !inPlaceholder {
			switch {
			case t.o.SupportPriorJoiners && c.s == t.o.Joiner:
				if b.isNewToken() {
					if i > 0 && cs[i-1].typ == ctSeparator {
						b.cur.joinLeft = true
					} else if len(b.tokens) > 0 {
						b.previous().joinRight = true
					}
				} else {
					b.cur.joinRight = true
					b.segment()
				}
			case c.v == 0xFF5F: // ｟
				if !b.isNewToken() {
					if i > 0 && cs[i-1].typ != ctSeparator {
						b.cur.joinRight = true
					}
					if t.o.PreserveSegmentedTokens {
						b.cur.preserve = true
					}
					b.segment()
				}
				b.appendChar(c)
				inPlaceholder = true
			case t.o.mode == modeSpace:
				switch {
				case c.s == featureMark:
					inFeatures = true // features are dropped: OpenNMT-py keeps the words only
				case c.typ == ctSeparator:
					b.segment()
					inFeatures = false
				case inFeatures:
				default:
					b.safeAppend(c)
				}
			default:
				b.safeAppend(c)
			}
		} else if c.typ == ctSeparator {
			b.escapeAppend(c)
		} else {
			b.appendChar(c)
			if c.v == 0xFF60 { // ｠
				if i+1 < len(cs) && cs[i+1].typ != ctSeparator {
					b.cur.joinRight = true
				}
				if t.o.PreservePlaceholders || t.o.PreserveSegmentedTokens {
					b.cur.preserve = true
				}
				b.segment()
				inPlaceholder = false
			}
		}
	}
	b.segment()
	return b.tokens
}

// Alphabets beside the scripts.
const (
	placeholderAlphabet = -2
	numberAlphabet      = -3
)

type state uint8

const (
	stLetter state = iota
	stNumber
	stSpace
	stOther
	stPlaceholder
)

// nextMainChar is the index after a character's combining marks.
func (t *Tokenizer) nextMainChar(cs []char, scripts []int, offset int) int {
	next := offset + 1
	for next < len(cs) {
		if cs[next].typ != ctMark {
			break
		}
		if t.o.AllowIsolatedMarks {
			if cs[offset].typ == ctSeparator {
				break
			}
			if t.o.SegmentAlphabetChange && scripts[next] != scripts[offset] {
				break
			}
		}
		next++
	}
	return next
}

func (t *Tokenizer) tokenizeText(text string) []token {
	pooled := charPool.Get().(*[]char)
	cs := chars(text, (*pooled)[:0])
	defer func() { *pooled = cs[:0]; charPool.Put(pooled) }()
	// Scripts tell letters' alphabets apart, which only the segmentation by
	// alphabet looks at: without it (scripts nil) every letter is of
	// alphabet 0.
	var scripts []int
	if t.o.SegmentAlphabetChange || len(t.o.segmentScripts) > 0 {
		scripts = make([]int, len(cs))
		prevScript := -1
		for i, c := range cs {
			s := scriptOf(c.v, prevScript)
			scripts[i] = s
			if s != -1 {
				prevScript = s
			}
		}
	}
	b := &builder{noSubstitution: t.o.NoSubstitution, text: text}
	st := stSpace
	prevAlphabet := -1
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		v := c.v
		if dropped(v) {
			continue
		}
		next := t.nextMainChar(cs, scripts, i)
		var nextC *char
		if next < len(cs) {
			nextC = &cs[next]
		}
		marks := next != i+1
		// withMarks appends the character's combining marks to the token
		// and moves past them.
		withMarks := func() {
			if marks {
				b.appendChars(cs[i+1 : next])
				i = next - 1
			}
		}
		switch {
		case st == stPlaceholder:
			switch {
			case v == 0xFF60:
				b.appendChar(c)
				if t.o.PreservePlaceholders {
					b.cur.preserve = true
				}
				prevAlphabet = placeholderAlphabet
				st = stLetter
			case c.typ == ctSeparator:
				b.escapeAppend(c)
			default:
				b.appendChar(c)
			}
		case v == 0xFF5F:
			if st != stSpace {
				b.segment()
				if (st == stLetter && prevAlphabet != placeholderAlphabet) || st == stNumber {
					b.cur.joinLeft = true
				} else {
					b.previous().joinRight = true
				}
			}
			b.appendChar(c)
			st = stPlaceholder
		case c.typ == ctSeparator:
			if marks {
				if st != stSpace {
					b.segment()
					b.cur.joinLeft = true
				}
				b.escapeAppend(c)
				b.appendChars(cs[i+1 : next])
				b.segment()
				i = next - 1
				st = stOther
			} else {
				if st != stSpace {
					b.segment()
				}
				if t.o.WithSeparators {
					b.appendChar(c)
					if nextC == nil || nextC.typ != ctSeparator {
						b.segment()
					}
				}
				st = stSpace
			}
		case t.o.SupportPriorJoiners && c.s == t.o.Joiner:
			switch st {
			case stOther:
				b.previous().joinRight = true
			case stSpace:
				b.cur.joinLeft = true
			default:
				b.segment()
				b.previous().joinRight = true
				st = stSpace
			}
		default:
			isLetter := c.typ == ctLetter
			isNumber := c.typ == ctNumber
			alphabet := -1
			if isNumber {
				alphabet = numberAlphabet
			} else if isLetter {
				alphabet = 0
				if scripts != nil {
					alphabet = scripts[i]
				}
			}
			if t.o.mode == modeConservative {
				if isNumber || v == '_' || (st == stLetter && v == '-') ||
					(st == stLetter && (v == '.' || v == ',') && nextC != nil && (nextC.typ == ctNumber || nextC.typ == ctLetter)) {
					isLetter = true
					alphabet = numberAlphabet
				}
			}
			switch {
			case isLetter && t.o.mode != modeChar:
				newCasing := updateCasing(b.cur.casing, c.cas, b.curLen)
				segCase, segAlphabet, segAlphabetChange := false, false, false
				split := st == stNumber
				if !split && st == stLetter {
					segAlphabet = prevAlphabet == alphabet && alphabet >= 0 && t.o.segmentScripts[alphabet]
					split = segAlphabet
					if !split {
						segAlphabetChange = prevAlphabet != alphabet && t.o.SegmentAlphabetChange
						split = segAlphabetChange
					}
					if !split {
						split = prevAlphabet == placeholderAlphabet
					}
					if !split && t.o.SegmentCase {
						segCase = newCasing == CasingMixed
						split = segCase
					}
				}
				if split {
					b.cur.joinRight = true
					if t.o.PreserveSegmentedTokens && (segCase || segAlphabet || segAlphabetChange) {
						b.cur.preserve = true
					}
					b.segment()
					b.cur.casing = updateCasing(b.cur.casing, c.cas, 0)
				} else {
					b.cur.casing = newCasing
					if st == stOther && b.isNewToken() {
						b.previous().joinRight = true
					}
				}
				b.safeAppend(c)
				withMarks()
				st = stLetter
				prevAlphabet = alphabet
			case isNumber && t.o.mode != modeChar:
				segNumber := t.o.SegmentNumbers && st == stNumber
				if st == stLetter || segNumber {
					if t.o.PreserveSegmentedTokens && segNumber {
						b.cur.preserve = true
					}
					b.segment()
					if st != stLetter || prevAlphabet == placeholderAlphabet {
						b.previous().joinRight = true
					} else {
						b.cur.joinLeft = true
					}
				} else if st == stOther {
					b.previous().joinRight = true
				}
				b.safeAppend(c)
				withMarks()
				st = stNumber
			default:
				if st != stSpace {
					b.segment()
					b.cur.joinLeft = true
					if t.o.PreserveSegmentedTokens && c.typ == ctMark {
						b.cur.preserve = true
					}
				}
				b.safeAppend(c)
				withMarks()
				b.segment()
				st = stOther
			}
		}
	}
	b.segment()
	return b.tokens
}

// finalize writes annotated tokens as strings: joiners or spacers, case
// markup.
func (t *Tokenizer) finalize(toks []token) []string {
	out := make([]string, 0, len(toks)+len(toks)/4)
	var markups []caseMarkup
	if t.o.CaseMarkup {
		markups = caseMarkups(toks, t.o.SoftCaseRegions)
	}
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	for i := range toks {
		tk := &toks[i]
		if t.o.CaseMarkup && markups[i].prefix != markupNone {
			out = append(out, writeCaseMarkup(markups[i].prefix, markups[i].casing))
		}
		prefix, suffix := "", ""
		attach := !tk.preserve
		if t.o.JoinerAnnotate {
			if tk.joinLeft && i > 0 {
				prefix = t.o.Joiner
			}
			if tk.joinRight && i+1 < len(toks) {
				suffix = t.o.Joiner
			}
			if tk.spacer {
				attach = true
			}
			attach = attach && !t.o.JoinerNew
		} else if t.o.SpacerAnnotate {
			if (i == 0 && tk.spacer) || (i > 0 && !tk.joinLeft && !toks[i-1].joinRight) {
				prefix = SpacerMarker
			}
			attach = attach && !t.o.SpacerNew
		}
		switch {
		case prefix == "" && suffix == "":
			add(tk.surface)
		case attach:
			add(prefix + tk.surface + suffix)
		default:
			add(prefix)
			add(tk.surface)
			add(suffix)
		}
		if t.o.CaseMarkup && markups[i].suffix != markupNone {
			out = append(out, writeCaseMarkup(markups[i].suffix, markups[i].casing))
		}
	}
	return out
}

// Detokenize joins tokens into text, as pyonmttok's detokenize.
func (t *Tokenizer) Detokenize(words []string) string {
	toks := t.parse(words)
	n := len(toks)
	for i := range toks {
		n += len(toks[i].surface)
	}
	var line strings.Builder
	line.Grow(n)
	for i := range toks {
		tk := &toks[i]
		if !t.o.WithSeparators && i > 0 && !toks[i-1].joinRight && !tk.joinLeft {
			line.WriteByte(' ')
		}
		w := tk.surface
		if !tk.isPlaceholder() {
			if tk.casing != CasingNone && tk.casing != CasingLowercase {
				w = restoreCasing(w, tk.casing, t.o.Lang)
			}
			w = unescape(w)
		}
		line.WriteString(w)
	}
	return line.String()
}

// parse reads tokens back: their joiners or spacers, the case markup.
func (t *Tokenizer) parse(words []string) []token {
	toks := make([]token, 0, len(words))
	region, modifier := CasingNone, CasingNone
	for _, w := range words {
		if w == "" {
			continue
		}
		switch readCaseMarkup(w) {
		case markupRegionBegin:
			region, modifier = casingFromMarkup(w), CasingNone
			continue
		case markupRegionEnd:
			region, modifier = CasingNone, CasingNone
			continue
		case markupModifier:
			modifier = casingFromMarkup(w)
			continue
		default:
			if modifier == CasingNone {
				modifier = region
			}
		}
		tk := t.annotate(w)
		tk.casing = modifier
		if !tk.empty() {
			modifier = CasingNone
		}
		toks = append(toks, tk)
	}
	return toks
}

// annotate reads one token's joiners or spacer.
func (t *Tokenizer) annotate(w string) token {
	var tk token
	pos, n := 0, len(w)
	if t.o.SpacerAnnotate {
		if strings.HasPrefix(w, SpacerMarker) {
			pos += len(SpacerMarker)
			n -= len(SpacerMarker)
		} else {
			tk.joinLeft = true
		}
	} else {
		j := t.o.Joiner
		if strings.HasSuffix(w, j) {
			tk.joinRight = true
			n -= len(j)
		}
		if strings.HasPrefix(w, j) {
			tk.joinLeft = true
			pos += len(j)
			n -= len(j)
		}
	}
	if n < 0 { // a lone joiner: the Tokenizer's length wraps around
		tk.surface = w[pos:]
	} else {
		tk.surface = w[pos : pos+n]
	}
	return tk
}

// unescape replaces the Tokenizer's escapes ("％" and 4 hexadecimal
// digits) with the characters they stand for.
func unescape(s string) string {
	if !strings.Contains(s, escapePrefix) {
		return s
	}
	const width = 4
	for offset := 0; ; {
		j := strings.Index(s[offset:], escapePrefix)
		if j < 0 {
			break
		}
		i := offset + j
		if i+len(escapePrefix)+width > len(s) {
			break
		}
		code := s[i+len(escapePrefix) : i+len(escapePrefix)+width]
		v, ok := parseHex4(code)
		if !ok || v == 0 || (v >= 0xD800 && v <= 0xDFFF) {
			offset = i + len(escapePrefix)
			continue
		}
		s = s[:i] + string(v) + s[i+len(escapePrefix)+width:]
		offset = i + 1
	}
	return s
}

func parseHex4(s string) (rune, bool) {
	var v rune
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// Produces tells whether the Tokenizer can write token: case markup and
// placeholders, joiners and spacers alone where the options write them,
// and otherwise a token whose text (its joiners or spacer removed) the
// subword model can produce (any text, without one).
func (t *Tokenizer) Produces(tok string) bool {
	if isPlaceholder(tok) {
		return true
	}
	core := tok
	switch {
	case t.o.JoinerAnnotate:
		if tok == t.o.Joiner {
			return t.o.JoinerNew
		}
		core = strings.TrimSuffix(strings.TrimPrefix(core, t.o.Joiner), t.o.Joiner)
	case t.o.SpacerAnnotate:
		if tok == SpacerMarker {
			return t.o.SpacerNew
		}
		core = strings.TrimPrefix(core, SpacerMarker)
	}
	if core == "" {
		return false
	}
	if t.subword == nil {
		return true
	}
	return t.subword.produces(core)
}

// Describe says what the tokenizer does: its options that are set, and
// its subword model.
func (t *Tokenizer) Describe() string {
	o := t.o
	parts := []string{"mode " + o.Mode}
	for _, f := range []struct {
		on   bool
		name string
	}{
		{o.JoinerAnnotate, "joiner_annotate"}, {o.JoinerNew, "joiner_new"}, {o.SpacerAnnotate, "spacer_annotate"},
		{o.SpacerNew, "spacer_new"}, {o.CaseMarkup, "case_markup"}, {o.SoftCaseRegions, "soft_case_regions"},
		{o.SegmentCase && !o.CaseMarkup, "segment_case"}, {o.SegmentNumbers, "segment_numbers"},
		{o.SegmentAlphabetChange, "segment_alphabet_change"}, {o.PreservePlaceholders, "preserve_placeholders"},
		{o.PreserveSegmentedTokens, "preserve_segmented_tokens"}, {o.SupportPriorJoiners, "support_prior_joiners"},
		{o.NoSubstitution, "no_substitution"}, {o.WithSeparators, "with_separators"}, {o.AllowIsolatedMarks, "allow_isolated_marks"},
	} {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	if o.Joiner != JoinerMarker {
		parts = append(parts, fmt.Sprintf("joiner %q", o.Joiner))
	}
	if len(o.SegmentAlphabet) > 0 {
		parts = append(parts, "segment_alphabet "+strings.Join(o.SegmentAlphabet, ","))
	}
	if o.Lang != "" {
		parts = append(parts, "lang "+o.Lang)
	}
	s := "the OpenNMT Tokenizer (" + strings.Join(parts, ", ") + ")"
	switch sw := t.subword.(type) {
	case *BPE:
		s += fmt.Sprintf(" with BPE, %d merges", len(sw.codes))
	case spSubword:
		s += " with SentencePiece"
	}
	return s
}

// CacheStats counts the subword model's cache of segmented words (zero
// without a subword model): what /metrics shows of a tokenizer.
func (t *Tokenizer) CacheStats() wordcache.Stats {
	switch sw := t.subword.(type) {
	case *BPE:
		return sw.cache.Stats()
	case spSubword:
		return sw.cache.Stats()
	}
	return wordcache.Stats{}
}
