package subword

import (
	"path/filepath"
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
