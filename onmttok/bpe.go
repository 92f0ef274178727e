package onmttok

import (
	"bufio"
	"fmt"
	"github.com/attnx/attnx/internal/mergeheap"
	"github.com/attnx/attnx/internal/wordcache"
	"io"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// BPE is the Tokenizer's BPE: merges from a codes file of subword-nmt's
// learn_bpe (versions 0.1 and 0.2), of the Tokenizer's own learner, or of
// the Lua learn_bpe ("v3;prefix;suffix;case_insensitive;<w>;</w>"), and
// an optional vocabulary that pieces outside it are split back against.
type BPE struct {
	codes           map[string]int       // concatenated pair -> rank
	reverse         map[string][2]string // concatenated pair -> its halves (the first pair seen)
	bow, eow        string
	prefix, suffix  bool
	caseInsensitive bool
	version         [2]int
	vocab           map[string]bool
	joinerAnnotate  bool // the options the vocabulary's pieces were written with
	joinerNew       bool
	spacerAnnotate  bool
	spacerNew       bool
	joiner          string
	cache           *wordcache.Cache
}

// LoadBPE reads a BPE codes file.
func LoadBPE(path string) (*BPE, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("BPE model: %w", err)
	}
	defer f.Close()
	b, err := ReadBPE(f)
	if err != nil {
		return nil, fmt.Errorf("BPE model %s: %w", path, err)
	}
	return b, nil
}

// ReadBPE reads BPE codes, as the Tokenizer's BPE::load_model.
func ReadBPE(r io.Reader) (*BPE, error) {
	b := &BPE{codes: map[string]int{}, reverse: map[string][2]string{}, bow: "<w>", eow: "</w>", suffix: true,
		joinerAnnotate: true, joiner: JoinerMarker, cache: wordcache.New(wordcache.Bytes)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return b, nil
	}
	first := lines[0]
	switch {
	case strings.HasPrefix(first, "#version:"):
		if len(first) < 3 {
			return nil, fmt.Errorf("unsupported BPE version")
		}
		b.version = [2]int{int(first[len(first)-3]) - '0', int(first[len(first)-1]) - '0'}
		if b.version != [2]int{0, 1} && b.version != [2]int{0, 2} {
			return nil, fmt.Errorf("unsupported BPE version %q (want 0.1 or 0.2)", first)
		}
		lines = lines[1:]
	default:
		opts := splitLuaHeader(first)
		if len(opts) == 6 && opts[0] == "v3" {
			b.prefix, b.suffix, b.caseInsensitive = opts[1] == "true", opts[2] == "true", opts[3] == "true"
			b.bow, b.eow = opts[4], opts[5]
			lines = lines[1:]
		}
	}
	header := true
	i := 0
	for _, line := range lines {
		if header && line != "" && line[0] == '#' {
			continue
		}
		header = false
		sep := strings.IndexByte(line, ' ')
		if sep < 0 || sep+1 >= len(line) {
			continue
		}
		a, c := line[:sep], line[sep+1:]
		pair := a + c
		if _, ok := b.codes[pair]; !ok {
			b.codes[pair] = i
			i++
		}
		if _, ok := b.reverse[pair]; !ok {
			b.reverse[pair] = [2]string{a, c}
		}
	}
	return b, nil
}

// splitLuaHeader splits the Lua learner's header at ';' as the Tokenizer
// does (a trailing ';' adds no empty field).
func splitLuaHeader(line string) []string {
	var out []string
	b := 0
	sep := strings.IndexByte(line, ';')
	for sep >= 0 && sep+1 < len(line) {
		out = append(out, line[b:sep])
		b = sep + 1
		n := strings.IndexByte(line[b:], ';')
		if n < 0 {
			sep = -1
		} else {
			sep = b + n
		}
	}
	return append(out, line[b:])
}

// SetVocabulary keeps the pieces to a vocabulary: a piece outside it
// (written with the tokenizer's joiners or spacer) is split back along
// its merges. The Tokenizer takes it with vocabulary_path and
// vocabulary_threshold.
func (b *BPE) SetVocabulary(vocab []string) {
	b.vocab = make(map[string]bool, len(vocab))
	for _, v := range vocab {
		b.vocab[v] = true
	}
	b.cache = wordcache.New(wordcache.Bytes)
}

func (b *BPE) adjust(o *resolved) {
	if b.vocab != nil {
		b.joinerAnnotate, b.joinerNew = o.JoinerAnnotate, o.JoinerNew
		b.spacerAnnotate, b.spacerNew = o.SpacerAnnotate, o.SpacerNew
		b.joiner = o.Joiner
	}
}

// span is a piece of the word being merged: its bytes in the working
// string.
type span struct{ s, e int }

// initialSpans are a word's characters, combining marks and escapes kept
// with the character before them, as spans of w: the word itself, or its
// lower-cased pieces joined for a case-insensitive model.
func initialSpans(word string, cs []char, lower bool) (w string, spans []span) {
	spans = make([]span, 0, len(cs)+2)
	var buf []byte
	if lower {
		buf = make([]byte, 0, len(word))
	}
	pos := 0 // in w
	escaped := 0
	add := func(c char, newPiece bool) {
		n := len(c.s)
		if lower {
			if c.cas == caseUpper && newPiece && escaped == 0 {
				before := len(buf)
				buf = utf8.AppendRune(buf, unicode.ToLower(c.v))
				n = len(buf) - before
			} else {
				buf = append(buf, c.s...)
			}
		} else {
			pos = c.off
		}
		if newPiece {
			spans = append(spans, span{pos, pos + n})
		} else {
			spans[len(spans)-1].e = pos + n
		}
		pos += n
	}
	for _, c := range cs {
		switch {
		case escaped > 0:
			escaped--
			add(c, false)
		case c.v == 0xFF05: // ％
			add(c, true)
			escaped = 4
		case c.typ == ctMark:
			add(c, len(spans) == 0)
		default:
			add(c, true)
		}
	}
	if lower {
		return string(buf), spans
	}
	return word, spans
}

// encode segments one word.
func (b *BPE) encode(s string) []string {
	if p, ok := b.cache.Get(s); ok {
		return p
	}
	p := b.encodeWord(s)
	b.cache.Add(s, p)
	return p
}

func (b *BPE) encodeWord(s string) []string {
	pooled := charPool.Get().(*[]char)
	info := chars(s, (*pooled)[:0])
	defer func() { *pooled = info[:0]; charPool.Put(pooled) }()
	w, sp := initialSpans(s, info, b.caseInsensitive)
	if len(sp) == 1 {
		return []string{s}
	}
	if len(sp) == 0 {
		return nil
	}
	// The word's end (and start) markers join the working bytes, so that
	// every pair of neighbours is a run of them.
	bufp := bytePool.Get().(*[]byte)
	defer bytePool.Put(bufp)
	buf := (*bufp)[:0]
	off := 0
	switch {
	case b.version == [2]int{0, 1}:
		sp = append(sp, span{len(w), len(w) + len(b.eow)})
	case b.version == [2]int{0, 2}:
		sp[len(sp)-1].e += len(b.eow)
	default:
		if b.suffix {
			sp = append(sp, span{len(w), len(w) + len(b.eow)})
		}
		if b.prefix {
			off = len(b.bow)
			for i := range sp {
				sp[i].s += off
				sp[i].e += off
			}
			sp = append([]span{{0, off}}, sp...)
			buf = append(buf, b.bow...)
		}
	}
	buf = append(buf, w...)
	if b.version != [2]int{0, 0} || b.suffix {
		buf = append(buf, b.eow...)
	}
	*bufp = buf
	sp = b.merge(buf, sp)
	// The pieces without the markers (a marker alone is no piece), as
	// bytes of the word: a start marker opens the first piece and an end
	// marker closes the last.
	lo, hi := off, off+len(w)
	out := make([]string, 0, len(sp))
	ci := 0
	for _, x := range sp {
		a, e := max(x.s, lo), min(x.e, hi)
		if a >= e {
			continue
		}
		if !b.caseInsensitive {
			out = append(out, s[a-off:e-off])
			continue
		}
		// A case-insensitive model's pieces are lower-cased: take the
		// input's characters, as many as make up the piece's bytes.
		start, end := -1, 0
		for n := 0; ci < len(info) && n < e-a; ci++ {
			c := info[ci]
			if c.cas == caseUpper {
				n += utf8.RuneLen(unicode.ToLower(c.v))
			} else {
				n += len(c.s)
			}
			if start < 0 {
				start = c.off
			}
			end = c.off + len(c.s)
		}
		if start < 0 {
			out = append(out, "")
		} else {
			out = append(out, s[start:end])
		}
	}
	return out
}

// bytePool holds the working bytes of words being merged.
var bytePool = sync.Pool{New: func() any { return new([]byte) }}

// merge applies the merges one at a time, best rank first (leftmost
// among equals), as the Tokenizer's BPE does, in O(n log n) for n spans:
// the spans are a linked list, the pairs found in the codes wait in
// package mergeheap's queue (package subword's BPE), and a pair whose
// sides have since merged is skipped when it comes out.
func (b *BPE) merge(w []byte, sp []span) []span {
	type symbol struct {
		span
		prev, next int
		gone       bool
	}
	syms := make([]symbol, len(sp))
	for i, x := range sp {
		syms[i] = symbol{span: x, prev: i - 1, next: i + 1}
	}
	syms[len(syms)-1].next = -1
	var h mergeheap.Heap
	queue := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		if r, ok := b.codes[string(w[syms[left].s:syms[right].e])]; ok {
			h.Push(mergeheap.Pair{Left: left, Right: right, Score: -float64(r), Size: syms[right].e - syms[left].s})
		}
	}
	for i := 1; i < len(syms); i++ {
		queue(i-1, i)
	}
	for h.Len() > 0 {
		p := h.Pop()
		l, r := &syms[p.Left], &syms[p.Right]
		// Stale: one side was merged away or grew since it was queued.
		if l.gone || r.gone || l.next != p.Right || r.e-l.s != p.Size {
			continue
		}
		l.e, l.next = r.e, r.next
		if r.next >= 0 {
			syms[r.next].prev = p.Left
		}
		r.gone = true
		queue(l.prev, p.Left)
		queue(p.Left, l.next)
	}
	sp = sp[:0]
	for i := 0; i >= 0; i = syms[i].next {
		sp = append(sp, syms[i].span)
	}
	return sp
}

func (b *BPE) annotate(t token, out []token) []token {
	enc := b.encode(t.surface)
	first := len(out)
	for j, p := range enc {
		sub := token{surface: p}
		if j == 0 {
			sub.joinLeft = t.joinLeft
			sub.preserve = t.joinLeft && t.preserve
		}
		if j+1 < len(enc) {
			sub.joinRight = true
		} else {
			sub.joinRight = t.joinRight
			sub.preserve = sub.preserve || (t.joinRight && t.preserve)
		}
		out = append(out, sub)
	}
	if b.vocab != nil {
		pieces := b.checkVocab(out[first:])
		out = append(out[:first], pieces...)
	}
	propagate(t, out[first:])
	return out
}

func (b *BPE) inVocab(t *token, first, last bool) bool {
	s := t.surface
	if b.joinerAnnotate && !b.joinerNew {
		if t.joinLeft && (!first || !t.preserve) {
			s = b.joiner + s
		}
		if t.joinRight && (!last || !t.preserve) {
			s = s + b.joiner
		}
	} else if b.spacerAnnotate && !b.spacerNew {
		if !t.joinLeft && (!first || !t.preserve) {
			s = SpacerMarker + s
		}
	}
	return b.vocab[s]
}

func (b *BPE) checkVocab(pieces []token) []token {
	out := make([]token, 0, len(pieces))
	for i := range pieces {
		first, last := i == 0, i+1 == len(pieces)
		if b.inVocab(&pieces[i], first, last) {
			out = append(out, pieces[i])
		} else {
			out = b.split(pieces[i], out, first, last)
		}
	}
	return out
}

// split undoes a piece's merge until its parts are in the vocabulary or
// cannot be split.
func (b *BPE) split(p token, out []token, first, last bool) []token {
	s := p.surface
	left, right := 0, 0
	if b.prefix && first {
		s = b.bow + s
		left = len(b.bow)
	}
	if b.suffix && last {
		s += b.eow
		right = len(b.eow)
	}
	pair, ok := b.reverse[s]
	if !ok {
		return append(out, p)
	}
	l := token{surface: substrFrom(pair[0], left), joinLeft: first && p.joinLeft, joinRight: true,
		preserve: first && p.joinLeft && p.preserve}
	if b.inVocab(&l, first, false) {
		out = append(out, l)
	} else {
		out = b.split(l, out, first, false)
	}
	r := token{surface: substrTo(pair[1], len(pair[1])-right), joinRight: !last || p.joinRight,
		preserve: last && p.joinRight && p.preserve}
	if b.inVocab(&r, false, last) {
		out = append(out, r)
	} else {
		out = b.split(r, out, false, last)
	}
	return out
}

func substrFrom(s string, i int) string {
	if i > len(s) {
		return ""
	}
	return s[i:]
}

func substrTo(s string, n int) string {
	if n < 0 {
		return s
	}
	return s[:n]
}

// propagate gives a word's pieces its casing, its features' order (first
// piece leading) as the Tokenizer's propagate_token_properties.
func propagate(t token, toks []token) {
	if t.casing != CasingNone {
		for i := range toks {
			c := t.casing
			if c == CasingCapitalized && i > 0 {
				c = CasingLowercase
			} else if c == CasingMixed {
				_, c = lowercaseToken(toks[i].surface, "")
			}
			toks[i].casing = c
		}
	}
	if len(toks) > 1 {
		toks[0].typ = typeLeadingSubword
		for i := 1; i < len(toks); i++ {
			toks[i].typ = typeTrailingSubword
		}
	}
}

func (b *BPE) produces(core string) bool {
	if _, sp := initialSpans(core, chars(core, nil), false); len(sp) == 1 {
		return true
	}
	for _, s := range []string{core, core + b.eow, b.bow + core, b.bow + core + b.eow} {
		if _, ok := b.reverse[s]; ok {
			return true
		}
	}
	return false
}
