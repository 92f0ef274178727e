package subword

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/attnx/attnx/internal/mergeheap"
	"github.com/attnx/attnx/internal/wordcache"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultSeparator is subword-nmt's joiner: a piece followed by "@@" is
// continued by the next one ("th@@ e" is "the").
const DefaultSeparator = "@@"

const endOfWord = "</w>"

// BPEOptions are subword-nmt apply_bpe's options.
type BPEOptions struct {
	// Separator marks a piece that the next one continues; "" means
	// DefaultSeparator.
	Separator string
	// Merges uses only the first Merges codes; 0 or less uses all.
	Merges int
	// Glossaries are regular expressions of words never split (and split
	// out of longer words), as apply_bpe's --glossaries.
	Glossaries []string
	// Vocabulary, when not nil, holds the pieces allowed in the output
	// (apply_bpe's --vocabulary after --vocabulary-threshold): pieces
	// outside it are split back by reversing merges.
	Vocabulary map[string]bool
}

// BPE segments white-space tokenised text with subword-nmt's BPE codes, as
// subword-nmt's apply_bpe does.
type BPE struct {
	version    [2]int
	ranks      map[[2]string]int
	reverse    map[string][2]string
	sep        string
	glossaries []glossary
	glossAll   *regexp.Regexp
	vocab      map[string]bool

	// cache holds the segmentation of recent words: bounded in bytes,
	// since every distinct word of every input would otherwise stay for
	// good.
	cache *wordcache.Cache
}

// CacheStats counts a tokenizer's cache of segmented words.
type CacheStats = wordcache.Stats

// CacheStats returns the word cache's counts.
func (b *BPE) CacheStats() CacheStats { return b.cache.Stats() }

// LoadBPE reads a subword-nmt codes file (learn_bpe's output: an optional
// "#version: 0.2" line, then one merge per line, two symbols separated by a
// space).
func LoadBPE(path string, opts BPEOptions) (*BPE, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bpe, err := ParseBPE(b, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: not a subword-nmt BPE codes file (%w)", path, err)
	}
	return bpe, nil
}

// isFastBPELine reports whether a codes line is fastBPE's "a b count".
func isFastBPELine(line string) bool {
	f := strings.Split(strings.Trim(line, "\r\n "), " ")
	if len(f) != 3 {
		return false
	}
	_, err := strconv.ParseUint(f[2], 10, 64)
	return err == nil
}

// ParseBPE reads subword-nmt codes from the bytes of a codes file, or
// fastBPE's (each merge with its count).
func ParseBPE(data []byte, opts BPEOptions) (*BPE, error) {
	if len(data) == 0 {
		return nil, errors.New("empty file")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errors.New("binary data, want text")
	}
	text := string(data)
	first, rest, _ := strings.Cut(text, "\n")
	b := &BPE{version: [2]int{0, 1}, sep: opts.Separator, cache: wordcache.New(wordcache.Bytes), vocab: opts.Vocabulary}
	if b.sep == "" {
		b.sep = DefaultSeparator
	}
	offset := 1
	if strings.HasSuffix(first, "byte") {
		return nil, errors.New("byte-level codes (learn_bpe --bytes) are not supported")
	}
	if strings.HasPrefix(first, "#version:") {
		v, err := parseVersion(first)
		if err != nil {
			return nil, err
		}
		b.version = v
		text = rest
		offset = 2
	}
	if b.version != [2]int{0, 1} && b.version != [2]int{0, 2} {
		return nil, fmt.Errorf("codes version %d.%d: want 0.1 or 0.2", b.version[0], b.version[1])
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	// fastBPE's codes (fairseq's --bpe fastbpe) give each merge its count,
	// "a b 1234", and mark the end of a word as subword-nmt 0.2 does:
	// read as 0.2 codes, the counts left out.
	fast := offset == 1 && isFastBPELine(lines[0])
	if fast {
		b.version = [2]int{0, 2}
	}
	if opts.Merges > 0 && opts.Merges < len(lines) {
		lines = lines[:opts.Merges]
	}
	type code struct {
		pair [2]string
		last int
	}
	b.ranks = make(map[[2]string]int, len(lines))
	var codes []code
	index := map[[2]string]int{}
	for i, line := range lines {
		f := strings.Split(strings.Trim(line, "\r\n "), " ")
		if fast {
			if !isFastBPELine(line) {
				return nil, fmt.Errorf("line %d %q: want two symbols and a count separated by spaces (fastBPE codes)", i+offset, line)
			}
			f = f[:2]
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d %q: want two symbols separated by a space", i+offset, line)
		}
		pair := [2]string{f[0], f[1]}
		if _, ok := b.ranks[pair]; !ok {
			b.ranks[pair] = i
			index[pair] = len(codes)
			codes = append(codes, code{pair: pair})
		}
		codes[index[pair]].last = i
	}
	// apply_bpe's reverse map goes through its codes dictionary, whose
	// order is that of each pair's last line, last first; of pairs that
	// concatenate to the same string the one met last there wins.
	sort.SliceStable(codes, func(i, j int) bool { return codes[i].last > codes[j].last })
	b.reverse = make(map[string][2]string, len(codes))
	for _, c := range codes {
		b.reverse[c.pair[0]+c.pair[1]] = c.pair
	}
	for _, g := range opts.Glossaries {
		re, err := regexp.Compile(g)
		if err != nil {
			return nil, fmt.Errorf("glossary %q: %w", g, err)
		}
		// apply_bpe anchors a glossary by plain concatenation, "^" + g + "$".
		whole, err := regexp.Compile("^" + g + "$")
		if err != nil {
			return nil, fmt.Errorf("glossary %q: %w", g, err)
		}
		b.glossaries = append(b.glossaries, glossary{re, whole})
	}
	if len(opts.Glossaries) > 0 {
		b.glossAll = regexp.MustCompile("^(?:" + strings.Join(opts.Glossaries, "|") + ")$")
	}
	return b, nil
}

func parseVersion(line string) ([2]int, error) {
	f := strings.Fields(line)
	v := f[len(f)-1]
	for strings.HasSuffix(v, ".0") && strings.Count(v, ".") > 1 {
		v = strings.TrimSuffix(v, ".0")
	}
	major, minor, ok := strings.Cut(v, ".")
	a, err1 := strconv.Atoi(major)
	c, err2 := strconv.Atoi(minor)
	if !ok || err1 != nil || err2 != nil {
		return [2]int{}, fmt.Errorf("version line %q: want \"#version: 0.2\"", line)
	}
	return [2]int{a, c}, nil
}

// Separator is the joiner that ends a piece continued by the next one.
func (b *BPE) Separator() string { return b.sep }

// Encode splits text at spaces (as apply_bpe does: only the space
// character separates words) and segments each word, marking every piece
// but a word's last with the separator.
func (b *BPE) Encode(text string) []string {
	var out []string
	for _, word := range strings.Split(strings.Trim(text, "\r\n "), " ") {
		if word == "" {
			continue
		}
		var pieces []string
		for _, seg := range b.isolateGlossaries(word) {
			pieces = append(pieces, b.encodeWord(seg)...)
		}
		for i, p := range pieces {
			if i < len(pieces)-1 {
				p += b.sep
			}
			out = append(out, p)
		}
	}
	return out
}

// Decode joins pieces into text, removing the separators.
func (b *BPE) Decode(pieces []string) string {
	s := strings.Join(pieces, " ")
	s = strings.ReplaceAll(s, b.sep+" ", "")
	return strings.TrimSuffix(s, b.sep)
}

func (b *BPE) encodeWord(orig string) []string {
	if w, ok := b.cache.Get(orig); ok {
		return w
	}
	if b.glossAll != nil && b.glossAll.MatchString(orig) {
		b.store(orig, []string{orig})
		return []string{orig}
	}
	if utf8.RuneCountInString(orig) == 1 {
		return []string{orig}
	}
	word := b.merge(orig)
	last := len(word) - 1
	if word[last] == endOfWord {
		word = word[:last]
	} else if strings.HasSuffix(word[last], endOfWord) {
		word[last] = strings.TrimSuffix(word[last], endOfWord)
	}
	if b.vocab != nil {
		word = b.checkVocab(word)
	}
	b.store(orig, word)
	return word
}

// merge applies the codes to one word as apply_bpe's encode does, in
// O(n log n) for a word of n characters: the symbols are a linked list of
// substrings of the word, the adjacent pairs found in the codes wait in a
// heap, lowest rank first (leftmost on ties). apply_bpe merges every
// occurrence of the lowest-ranked pair in one pass, left to right, before
// it looks at the pairs those merges made; so each round takes all the
// heap's entries of that rank, merges those still standing in order, and
// only then queues the new pairs (with codes in which a merged symbol's
// pair ranks before its parts, merging one at a time would differ).
func (b *BPE) merge(orig string) []string {
	// s is the word with the end-of-word mark; every symbol is a
	// substring of it, so merging allocates no strings.
	s := orig + endOfWord
	type symbol struct{ prev, next, start, end int }
	var syms []symbol
	for pos := 0; pos < len(orig); {
		_, l := utf8.DecodeRuneInString(orig[pos:])
		i := len(syms)
		syms = append(syms, symbol{prev: i - 1, next: i + 1, start: pos, end: pos + l})
		pos += l
	}
	if b.version == [2]int{0, 1} {
		i := len(syms)
		syms = append(syms, symbol{prev: i - 1, next: i + 1, start: len(orig), end: len(s)})
	} else {
		syms[len(syms)-1].end = len(s)
	}
	syms[len(syms)-1].next = -1
	text := func(i int) string { return s[syms[i].start:syms[i].end] }
	h := &mergeheap.Heap{}
	queue := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		if r, ok := b.ranks[[2]string{text(left), text(right)}]; ok {
			h.Push(mergeheap.Pair{Left: left, Right: right, Score: -float64(r), Size: syms[right].end - syms[left].start})
		}
	}
	for i := 1; i < len(syms); i++ {
		queue(i-1, i)
	}
	var round, made []mergeheap.Pair
	for h.Len() > 0 {
		round = append(round[:0], h.Pop())
		for h.Len() > 0 && h.Top().Score == round[0].Score {
			round = append(round, h.Pop())
		}
		made = made[:0]
		for _, p := range round {
			l, r := &syms[p.Left], &syms[p.Right]
			// Stale: one side was merged away or grew since it was queued.
			if l.end == l.start || r.end == r.start || l.next != p.Right || r.end-l.start != p.Size {
				continue
			}
			l.end, l.next = r.end, r.next
			if r.next >= 0 {
				syms[r.next].prev = p.Left
			}
			r.start, r.end = 0, 0
			made = append(made, mergeheap.Pair{Left: l.prev, Right: p.Left}, mergeheap.Pair{Left: p.Left, Right: l.next})
		}
		for _, p := range made {
			if p.Left >= 0 && p.Right >= 0 && syms[p.Left].end > syms[p.Left].start && syms[p.Left].next == p.Right {
				queue(p.Left, p.Right)
			}
		}
	}
	var word []string
	for i := 0; i >= 0; i = syms[i].next {
		word = append(word, text(i))
	}
	return word
}

func (b *BPE) store(orig string, word []string) { b.cache.Add(orig, word) }

// checkVocab splits pieces outside the vocabulary back by reversing merges
// (apply_bpe's check_vocab_and_split).
func (b *BPE) checkVocab(word []string) []string {
	var out []string
	for _, seg := range word[:len(word)-1] {
		if b.vocab[seg+b.sep] {
			out = append(out, seg)
		} else {
			out = b.recursiveSplit(out, seg, false)
		}
	}
	seg := word[len(word)-1]
	if b.vocab[seg] {
		return append(out, seg)
	}
	return b.recursiveSplit(out, seg, true)
}

func (b *BPE) recursiveSplit(out []string, seg string, final bool) []string {
	var left, right string
	if final {
		p, ok := b.reverse[seg+endOfWord]
		if !ok {
			return append(out, seg)
		}
		// apply_bpe drops the right symbol's last four characters.
		left, right = p[0], p[1][:max(0, len(p[1])-len(endOfWord))]
	} else {
		p, ok := b.reverse[seg]
		if !ok {
			return append(out, seg)
		}
		left, right = p[0], p[1]
	}
	if b.vocab[left+b.sep] {
		out = append(out, left)
	} else {
		out = b.recursiveSplit(out, left, false)
	}
	if (final && b.vocab[right]) || (!final && b.vocab[right+b.sep]) {
		return append(out, right)
	}
	return b.recursiveSplit(out, right, final)
}

// isolateGlossaries splits glossary matches out of a word, one glossary
// after the other (apply_bpe's isolate_glossary).
func (b *BPE) isolateGlossaries(word string) []string {
	segs := []string{word}
	for _, g := range b.glossaries {
		var next []string
		for _, s := range segs {
			next = append(next, isolate(s, g)...)
		}
		segs = next
	}
	return segs
}

// glossary is one of apply_bpe's glossaries: the expression, and the
// expression anchored at both ends.
type glossary struct{ re, whole *regexp.Regexp }

func isolate(word string, g glossary) []string {
	if g.whole.MatchString(word) || !g.re.MatchString(word) {
		return []string{word}
	}
	// re.split with the glossary as a group: the text between matches and
	// the matches themselves, empty strings dropped, except that the text
	// after the last match is kept (stripped) unless it is empty.
	var segs []string
	pos := 0
	for _, m := range g.re.FindAllStringIndex(word, -1) {
		if word[pos:m[0]] != "" {
			segs = append(segs, word[pos:m[0]])
		}
		if word[m[0]:m[1]] != "" {
			segs = append(segs, word[m[0]:m[1]])
		}
		pos = m[1]
	}
	if ending := word[pos:]; ending != "" {
		segs = append(segs, strings.Trim(ending, "\r\n "))
	}
	return segs
}

// ReadBPEVocabulary reads subword-nmt's vocabulary file (get_vocab's
// output: a piece and its count per line) keeping the pieces counted at
// least threshold times, as apply_bpe --vocabulary --vocabulary-threshold.
func ReadBPEVocabulary(path string, threshold int) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vocab := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		word, count, ok := strings.Cut(strings.Trim(sc.Text(), "\r\n "), " ")
		c, err := strconv.Atoi(count)
		if !ok || err != nil || strings.Contains(count, " ") {
			return nil, fmt.Errorf("%s line %d %q: want a piece and its count separated by a space", path, n, sc.Text())
		}
		if c >= threshold {
			vocab[word] = true
		}
	}
	return vocab, sc.Err()
}
