package subword

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSentencePieceBadFiles checks that files that are not SentencePiece
// models, and truncated or corrupted ones, give errors (or load, when the
// damage happens to leave a valid message), never a panic.
func TestSentencePieceBadFiles(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "unigram.model"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"text", []byte("this is a vocabulary file\nwith lines\n"), "malformed protobuf"},
		{"bpe codes", []byte("#version: 0.2\nt h\nth e</w>\n"), "malformed protobuf"},
		{"no pieces", []byte{0x12, 0x02, 0x18, 0x01}, "no pieces"},
	}
	for _, c := range cases {
		_, err := ParseSentencePiece(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "vocab.model")
	os.WriteFile(path, []byte("<unk>\t0\n"), 0o644)
	if _, err := LoadSentencePiece(path); err == nil || !strings.Contains(err.Error(), path+": not a SentencePiece model file") {
		t.Errorf("vocabulary file: %v", err)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		b := append([]byte(nil), good[:rng.Intn(len(good))]...)
		if i%2 == 1 && len(b) > 0 {
			for j := 0; j < 20; j++ {
				b[rng.Intn(len(b))] = byte(rng.Intn(256))
			}
		}
		sp, err := ParseSentencePiece(b)
		if err == nil {
			// Whatever loaded must segment and join without panicking.
			sp.Decode(sp.Encode("Ｔhe  attention\tweights 😀 sum to one"))
		}
	}
}
