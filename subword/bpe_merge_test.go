package subword

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// applyBPEMerges is apply_bpe's merge loop as written there, one full rescan
// of the word per merge: the reference the heap-based merge must match.
func applyBPEMerges(b *BPE, orig string) []string {
	chars := strings.Split(orig, "")
	var word []string
	if b.version == [2]int{0, 1} {
		word = append(chars, endOfWord)
	} else {
		word = append(chars[:len(chars)-1:len(chars)-1], chars[len(chars)-1]+endOfWord)
	}
	for len(word) > 1 {
		best, bestRank := [2]string{}, -1
		for i := 0; i+1 < len(word); i++ {
			p := [2]string{word[i], word[i+1]}
			if r, ok := b.ranks[p]; ok && (bestRank < 0 || r < bestRank) {
				best, bestRank = p, r
			}
		}
		if bestRank < 0 {
			break
		}
		next := make([]string, 0, len(word))
		for i := 0; i < len(word); {
			if i+1 < len(word) && word[i] == best[0] && word[i+1] == best[1] {
				next = append(next, best[0]+best[1])
				i += 2
				continue
			}
			next = append(next, word[i])
			i++
		}
		word = next
	}
	return word
}

// TestBPEMergeMatchesRescan: the heap-based merge gives apply_bpe's
// symbols on random words, with the learned codes of testdata and with
// random codes in any order (where a merged symbol's pair can rank before
// the pair that made it, and runs of one letter overlap: "aaaa").
func TestBPEMergeMatchesRescan(t *testing.T) {
	learned, err := LoadBPE("testdata/bpe.codes", BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	learned01, err := LoadBPE("testdata/bpe01.codes", BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, n int) string {
		r := []rune(alphabet)
		var sb strings.Builder
		for range n {
			sb.WriteRune(r[rng.IntN(len(r))])
		}
		return sb.String()
	}
	// Random codes over a small alphabet: merges of random symbols seen so
	// far, in random order, so that ranks do not follow the merge tree.
	randomCodes := func(version string) *BPE {
		syms := []string{"a", "b", "c", "é", "a</w>", "b</w>", "c</w>", "é</w>"}
		var lines []string
		seen := map[string]bool{}
		for len(lines) < 60 {
			l, r := syms[rng.IntN(len(syms))], syms[rng.IntN(len(syms))]
			if strings.HasSuffix(l, endOfWord) || seen[l+" "+r] {
				continue
			}
			seen[l+" "+r] = true
			lines = append(lines, l+" "+r)
			syms = append(syms, l+r)
		}
		rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		b, err := ParseBPE([]byte(version+strings.Join(lines, "\n")+"\n"), BPEOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name     string
		bpe      *BPE
		alphabet string
	}{
		{"learned", learned, "abcdefghijklmnopqrstuvwxyzé"},
		{"learned-v0.1", learned01, "etaoinshrdlu"},
	}
	for i := range 20 {
		cases = append(cases, struct {
			name     string
			bpe      *BPE
			alphabet string
		}{fmt.Sprintf("random-%d", i), randomCodes("#version: 0.2\n"), "abcé"})
		cases = append(cases, struct {
			name     string
			bpe      *BPE
			alphabet string
		}{fmt.Sprintf("random-v0.1-%d", i), randomCodes(""), "abcé"})
	}
	words := 0
	for _, c := range cases {
		for n := 2; n < 40; n++ {
			for range 10 {
				w := word(c.alphabet, n)
				got, want := c.bpe.merge(w), applyBPEMerges(c.bpe, w)
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("%s: %q: merged %q, apply_bpe's loop %q", c.name, w, got, want)
				}
				words++
			}
		}
		for _, w := range []string{"aaaa", "aaaaa", "abababab", "ééééé", "\xffa\xfe"} {
			if got, want := c.bpe.merge(w), applyBPEMerges(c.bpe, w); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("%s: %q: merged %q, apply_bpe's loop %q", c.name, w, got, want)
			}
		}
	}
	t.Logf("%d words over %d sets of codes merged as apply_bpe does", words, len(cases))
}

// TestBPELongWordAllocations: a 16,000-letter word is segmented with a
// few dozen allocations (the heap's and the result's growth), where the
// rescanning loop made a new word and a new string at every merge, some
// 20,000 of each: the merge no longer copies the word per merge.
func TestBPELongWordAllocations(t *testing.T) {
	bpe, err := LoadBPE("testdata/bpe.codes", BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := randomLetters(16000)
	allocs := testing.AllocsPerRun(3, func() { bpe.merge(w) })
	if allocs > 100 {
		t.Errorf("merging a 16,000-letter word made %.0f allocations, want at most 100", allocs)
	}
	if got, want := bpe.merge(w), applyBPEMerges(bpe, w); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the 16,000-letter word merges to %d symbols, apply_bpe's loop %d", len(got), len(want))
	}
}

// BenchmarkBPELongWord measures one 16,000-letter random word, the shape
// of issue 36's request.
func BenchmarkBPELongWord(b *testing.B) {
	bpe, err := LoadBPE("testdata/bpe.codes", BPEOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w := randomLetters(16000)
	for b.Loop() {
		bpe.merge(w)
	}
}

// randomLetters is a word of n random letters a-z, the same each call.
func randomLetters(n int) string {
	rng := rand.New(rand.NewPCG(3, 4))
	letters := make([]byte, n)
	for i := range letters {
		letters[i] = byte('a' + rng.IntN(26))
	}
	return string(letters)
}
