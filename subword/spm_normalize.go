package subword

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// spaceSymbol is U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's visible
// white space.
const spaceSymbol = "\u2581"

// charsMap is a SentencePiece precompiled character map (the normaliser's
// rules, e.g. nmt_nfkc): a Darts-clone double-array trie over UTF-8 byte
// strings whose values index NUL-terminated replacements.
//
// Layout of the blob: a little-endian uint32 with the trie's size in bytes,
// the trie's units (little-endian uint32 each), then the replacements.
type charsMap struct {
	units       []uint32
	replacement []byte
}

func parseCharsMap(blob []byte) (*charsMap, error) {
	if len(blob) <= 4 {
		return nil, errors.New("precompiled_charsmap is too short for its header")
	}
	size := binary.LittleEndian.Uint32(blob)
	if uint64(size)+4 > uint64(len(blob)) || size%4 != 0 {
		return nil, fmt.Errorf("precompiled_charsmap: the trie's size in its header (%d bytes) does not fit the %d bytes after the header", size, len(blob)-4)
	}
	trie := blob[4 : 4+size]
	m := &charsMap{units: make([]uint32, size/4), replacement: blob[4+size:]}
	for i := range m.units {
		m.units[i] = binary.LittleEndian.Uint32(trie[4*i:])
	}
	if len(m.units) == 0 {
		return nil, errors.New("precompiled_charsmap: empty trie")
	}
	return m, nil
}

func dartsHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func dartsValue(u uint32) uint32  { return u & (1<<31 - 1) }
func dartsLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func dartsOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }

// longestMatch returns the replacement of the longest rule that is a prefix
// of s and that rule's length in bytes; ok is false when no rule matches.
func (m *charsMap) longestMatch(s string) (repl string, length int, ok bool) {
	pos := uint32(0)
	pos ^= dartsOffset(m.units[0])
	best := -1
	var bestValue uint32
	for i := 0; i < len(s); i++ {
		c := uint32(s[i])
		pos ^= c
		if int(pos) >= len(m.units) {
			break
		}
		u := m.units[pos]
		if dartsLabel(u) != c {
			break
		}
		pos ^= dartsOffset(u)
		if int(pos) >= len(m.units) {
			break
		}
		if dartsHasLeaf(u) {
			best = i + 1
			bestValue = dartsValue(m.units[pos])
		}
	}
	if best < 0 || int(bestValue) >= len(m.replacement) {
		return "", 0, false
	}
	r := m.replacement[bestValue:]
	if end := indexByte(r, 0); end >= 0 {
		r = r[:end]
	}
	return string(r), best, true
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// normalizer applies a NormalizerSpec the way SentencePiece does: the
// character map's longest rules, white space squeezed and trimmed, a dummy
// prefix, and white space escaped as U+2581.
type normalizer struct {
	spec        spmNormalizer
	rules       *charsMap
	userDefined *prefixSet
	wsAsSuffix  bool
}

// prefix returns the normalised form of s's first unit (a user-defined
// symbol, the longest character-map rule, or one character) and its
// length in s. Malformed UTF-8 becomes U+FFFD, consuming one byte.
func (n *normalizer) prefix(s string) (string, int) {
	if l := n.userDefined.longest(s); l > 0 {
		return s[:l], l
	}
	if n.rules != nil {
		if r, l, ok := n.rules.longestMatch(s); ok {
			return r, l
		}
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return "\uFFFD", 1
	}
	return s[:size], size
}

// normalize returns s normalised for segmentation.
func (n *normalizer) normalize(s string) string {
	if s == "" {
		return ""
	}
	if n.spec.removeExtraWS {
		for s != "" {
			p, l := n.prefix(s)
			if p != " " {
				break
			}
			s = s[l:]
		}
	}
	if s == "" {
		return ""
	}
	space := " "
	if n.spec.escapeWS {
		space = spaceSymbol
	}
	var b strings.Builder
	b.Grow(len(s) * 3)
	if !n.wsAsSuffix && n.spec.addDummyPrefix {
		b.WriteString(space)
	}
	prevSpace := n.spec.removeExtraWS
	for s != "" {
		p, l := n.prefix(s)
		for prevSpace && strings.HasPrefix(p, " ") {
			p = p[1:]
		}
		if p != "" {
			if n.spec.escapeWS {
				b.WriteString(strings.ReplaceAll(p, " ", spaceSymbol))
			} else {
				b.WriteString(p)
			}
			prevSpace = strings.HasSuffix(p, " ")
		}
		s = s[l:]
		if !n.spec.removeExtraWS {
			prevSpace = false
		}
	}
	out := b.String()
	if n.spec.removeExtraWS {
		for strings.HasSuffix(out, space) {
			out = out[:len(out)-len(space)]
		}
	}
	if n.wsAsSuffix && n.spec.addDummyPrefix {
		out += space
	}
	return out
}

// prefixSet finds the longest of a set of strings at the start of a text
// (SentencePiece's user-defined symbols, which are never split).
type prefixSet struct {
	set    map[string]bool
	maxLen int
}

func newPrefixSet(items []string) *prefixSet {
	p := &prefixSet{set: map[string]bool{}}
	for _, s := range items {
		if s == "" {
			continue
		}
		p.set[s] = true
		p.maxLen = max(p.maxLen, len(s))
	}
	return p
}

// longest returns the byte length of the longest member that s starts with,
// 0 when none.
func (p *prefixSet) longest(s string) int {
	if p == nil || len(p.set) == 0 {
		return 0
	}
	for l := min(p.maxLen, len(s)); l > 0; l-- {
		if p.set[s[:l]] {
			return l
		}
	}
	return 0
}
