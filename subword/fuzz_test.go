package subword

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzTexts are segmented by whatever a fuzzed file loads into.
var fuzzTexts = []string{"Ｔhe  attention\tweights 😀 sum to one", "ﷺ", "", " ", "a@@ b", "\xff\xfe"}

// FuzzSentencePiece feeds arbitrary bytes to the .model reader: an error
// or a model that segments and joins any text, never a panic. The seeds
// are the test models, one with a charsmap header claiming more than
// follows, and truncations.
func FuzzSentencePiece(f *testing.F) {
	models, _ := filepath.Glob("testdata/*.model")
	for _, m := range models {
		b, err := os.ReadFile(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(crafted(b))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sp, err := ParseSentencePiece(data)
		if err != nil {
			return
		}
		for _, s := range fuzzTexts {
			sp.Decode(sp.Encode(s))
		}
	})
}

// crafted appends a normalizer_spec whose charsmap header claims a trie of
// 8 bytes where 6 follow.
func crafted(model []byte) []byte {
	blob := []byte{8, 0, 0, 0, 1, 2, 3, 4, 5, 6}
	spec := append([]byte{0x0a, 8}, "nmt_nfkc"...)
	spec = append(append(spec, 0x12, byte(len(blob))), blob...)
	return append(append(append([]byte(nil), model...), 0x1a, byte(len(spec))), spec...)
}

// TestCraftedCharsmap: the header's size past the blob's end is an error
// naming both sizes (it sliced past the end).
func TestCraftedCharsmap(t *testing.T) {
	b, err := os.ReadFile("testdata/unigram.model")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseSentencePiece(crafted(b))
	if err == nil || err.Error() != "precompiled_charsmap: the trie's size in its header (8 bytes) does not fit the 6 bytes after the header" {
		t.Fatalf("got %v", err)
	}
}

// FuzzBPECodes feeds arbitrary bytes to the subword-nmt codes reader,
// versions 0.1 and 0.2, with and without a merge limit and glossaries.
func FuzzBPECodes(f *testing.F) {
	for _, n := range []string{"bpe.codes", "bpe01.codes"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
		f.Add(b[:len(b)/3], uint8(1))
	}
	f.Add([]byte("#version: 0.2\nt h\nth e</w>\n"), uint8(2))
	f.Add([]byte("#version: 9.9\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := BPEOptions{Merges: int(mode % 4 * 10)}
		if mode&4 != 0 {
			opts.Glossaries = []string{"[0-9]+", "GPL"}
		}
		bpe, err := ParseBPE(data, opts)
		if err != nil {
			return
		}
		for _, s := range fuzzTexts {
			bpe.Decode(bpe.Encode(s))
		}
	})
}

// FuzzBPEVocabulary feeds arbitrary bytes to the reader of apply_bpe's
// --vocabulary files ("piece count" lines).
func FuzzBPEVocabulary(f *testing.F) {
	b, err := os.ReadFile("testdata/bpe.vocab")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("the 3\nth@@ x\n\n a 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "vocab")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ReadBPEVocabulary(path, 2)
	})
}
