package subword

import (
	"fmt"
	"github.com/attnx/attnx/internal/wordcache"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestBPEMatchesSubwordNMT compares every piece of the corpus with what
// subword-nmt's apply_bpe wrote (testdata/make_bpe_fixtures.sh): version 0.2
// and 0.1 codes, a merge limit, glossaries and a vocabulary filter.
func TestBPEMatchesSubwordNMT(t *testing.T) {
	corpus := readLines(t, "testdata/corpus.txt")
	vocab, err := ReadBPEVocabulary("testdata/bpe.vocab", 5)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, codes string
		opts        BPEOptions
	}{
		{"plain", "bpe.codes", BPEOptions{}},
		{"v01", "bpe01.codes", BPEOptions{}},
		{"m200", "bpe.codes", BPEOptions{Merges: 200}},
		{"gloss", "bpe.codes", BPEOptions{Glossaries: []string{"GPL", "Licen[cs]e", "[0-9]+"}}},
		{"vocab5", "bpe.codes", BPEOptions{Vocabulary: vocab}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bpe, err := LoadBPE(filepath.Join("testdata", c.codes), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := readLines(t, filepath.Join("testdata", "corpus."+c.name+".bpe"))
			if len(want) != len(corpus) {
				t.Fatalf("%d lines, corpus %d", len(want), len(corpus))
			}
			bad, pieces := 0, 0
			for i, line := range corpus {
				// apply_bpe keeps a line's leading and trailing white
				// space and joins the pieces with single spaces.
				var w []string
				for _, p := range strings.Split(strings.Trim(want[i], "\r\n "), " ") {
					if p != "" {
						w = append(w, p)
					}
				}
				got := bpe.Encode(line)
				pieces += len(got)
				// Joining the pieces gives the words back, one space apart.
				var words []string
				for _, w := range strings.Split(strings.Trim(line, "\r\n "), " ") {
					if w != "" {
						words = append(words, w)
					}
				}
				if d := bpe.Decode(got); d != strings.Join(words, " ") {
					if bad++; bad <= 5 {
						t.Errorf("line %d: Decode gives %q, want %q", i+1, d, strings.Join(words, " "))
					}
				}
				if strings.Join(got, " ") != strings.Join(w, " ") {
					if bad++; bad <= 5 {
						t.Errorf("line %d %q:\n got  %q\n want %q", i+1, line, got, w)
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d lines differ from apply_bpe", bad, len(corpus))
			}
			t.Logf("%d lines, %d pieces identical to subword-nmt's apply_bpe", len(corpus), pieces)
		})
	}
}

func TestBPEDecode(t *testing.T) {
	bpe, err := ParseBPE([]byte("#version: 0.2\nt h\nth e</w>\n"), BPEOptions{Separator: "~~"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pieces []string
		want   string
	}{
		{[]string{"the", "ca~~", "t"}, "the cat"},
		{[]string{"ca~~", "t~~", "s", "sat"}, "cats sat"},
		{[]string{"dangling~~"}, "dangling"},
		{nil, ""},
	} {
		if got := bpe.Decode(c.pieces); got != c.want {
			t.Errorf("Decode(%q) = %q, want %q", c.pieces, got, c.want)
		}
	}
	if got := bpe.Encode("the theme"); strings.Join(got, " ") != "the th~~ e~~ m~~ e" {
		t.Errorf("Encode = %q", got)
	}
}

func TestBPEBadFiles(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
	}{
		{"empty", "", "empty file"},
		{"three symbols", "#version: 0.2\nt h e\n", `line 2 "t h e": want two symbols`},
		{"one symbol", "th\n", `line 1 "th": want two symbols`},
		{"blank line", "#version: 0.2\nt h\n\nh e\n", `line 3 "": want two symbols`},
		{"version", "#version: 0.3\nt h\n", "codes version 0.3"},
		{"bytes", "#version: 0.2 byte\nt h\n", "byte-level codes"},
		{"binary", "\x08\x01\x00\x12", "binary data"},
	} {
		_, err := ParseBPE([]byte(c.data), BPEOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ParseBPE([]byte("t h\n"), BPEOptions{Glossaries: []string{"("}}); err == nil || !strings.Contains(err.Error(), `glossary "("`) {
		t.Errorf("bad glossary: %v", err)
	}
}

// TestBPECacheBounded: 300,000 distinct words leave the cache at its
// bound in bytes and the heap within a few tens of MiB of where it started; the
// words segment as they do with a cold cache.
func TestBPECacheBounded(t *testing.T) {
	bpe, err := LoadBPE("testdata/bpe.codes", BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	word := func(i int) string { return fmt.Sprintf("w%dlicense%x", i, i*7919) }
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	const n = 300_000
	for i := 0; i < n; i += 100 {
		var line []string
		for j := i; j < i+100; j++ {
			line = append(line, word(j))
		}
		bpe.Encode(strings.Join(line, " "))
	}
	after := heap()
	st := bpe.CacheStats()
	grew := (float64(after) - float64(before)) / (1 << 20)
	t.Logf("%d distinct words: heap %+.1f MiB, cache %d entries, %d of %d bytes, %d hits, %d misses", n, grew, st.Entries, st.Bytes, st.MaxBytes, st.Hits, st.Misses)
	if st.Bytes > st.MaxBytes || st.MaxBytes != wordcache.Bytes || st.Bytes < st.MaxBytes*9/10 || st.Misses != n || st.Hits != 0 {
		t.Errorf("cache stats %+v, want about %d bytes held and %d misses", st, wordcache.Bytes, n)
	}
	if grew > 40 {
		t.Errorf("the heap grew by %.1f MiB after %d distinct words, want the cache's bound to hold it under 40 MiB", grew, n)
	}
	// A word the cache dropped, and one it holds, segment as a fresh BPE does.
	fresh, _ := LoadBPE("testdata/bpe.codes", BPEOptions{})
	for _, w := range []string{word(0), word(n - 1)} {
		if got, want := strings.Join(bpe.Encode(w), " "), strings.Join(fresh.Encode(w), " "); got != want {
			t.Errorf("%s: %q, a fresh BPE gives %q", w, got, want)
		}
	}
	if st := bpe.CacheStats(); st.Hits != 1 {
		t.Errorf("after one cached and one dropped word: %d hits, want 1", st.Hits)
	}
}

// TestBPECacheLongWords: words of 16,000 letters are segmented but not
// kept (with a bound by entries, ten of them took the heap up by 160 MB).
func TestBPECacheLongWords(t *testing.T) {
	bpe, err := LoadBPE("testdata/bpe.codes", BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("license", 16000/7)
	for i := range 10 {
		bpe.Encode(fmt.Sprintf("%s%d", long, i))
	}
	if st := bpe.CacheStats(); st.Entries != 0 || st.Bytes != 0 || st.Misses != 10 {
		t.Errorf("after 10 words of %d letters: %+v, want nothing cached and 10 misses", len(long), st)
	}
}

// TestFastBPECodes: fastBPE's codes ("a b count", fairseq's --bpe
// fastbpe) read as the subword-nmt 0.2 codes of the same merges: every
// line of a test set splits the same. (fastBPE applies merges as
// subword-nmt does, lowest rank first, the end of a word marked on its
// last character.)
func TestFastBPECodes(t *testing.T) {
	dir := filepath.Join("..", "testdata", "toolkits", "fairseq-lstm")
	codes, err := os.ReadFile(filepath.Join(dir, "bpecodes"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(codes), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "#version: 0.2") {
		t.Fatalf("%s: want subword-nmt 0.2 codes, first line %q", dir, lines[0])
	}
	var fast strings.Builder
	for i, l := range lines[1:] {
		fmt.Fprintf(&fast, "%s %d\n", l, 100000-i)
	}
	snmt, err := ParseBPE(codes, BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fb, err := ParseBPE([]byte(fast.String()), BPEOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "test.raw.en"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		a, b := snmt.Encode(line), fb.Encode(line)
		if !slices.Equal(a, b) {
			t.Errorf("%q: subword-nmt codes %q, fastBPE codes %q", line, a, b)
		}
		n += len(a)
	}
	if n == 0 {
		t.Fatal("no pieces")
	}
	if _, err := ParseBPE([]byte("e r 10\nt h\n"), BPEOptions{}); err == nil || !strings.Contains(err.Error(), `line 2 "t h": want two symbols and a count separated by spaces (fastBPE codes)`) {
		t.Errorf("fastBPE codes with a line without a count: %v", err)
	}
}
