package subword

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
)

func readLines(t *testing.T, path string) []string { return testenv.Lines(t, path) }

// TestSentencePieceMatchesSpm compares every piece, id and decoded line of
// the corpus with what spm_encode and spm_decode (SentencePiece 0.1.97)
// wrote for four models: unigram and BPE with nmt_nfkc, BPE with byte
// fallback and user-defined symbols, unigram with nfkc_cf and white space
// kept (testdata/make_spm_fixtures.sh).
func TestSentencePieceMatchesSpm(t *testing.T) {
	corpus := readLines(t, "testdata/corpus.txt")
	for _, name := range []string{"unigram", "bpe", "bpe_bytes", "unigram_plain"} {
		t.Run(name, func(t *testing.T) {
			sp, err := LoadSentencePiece(filepath.Join("testdata", name+".model"))
			if err != nil {
				t.Fatal(err)
			}
			wantPieces := readLines(t, filepath.Join("testdata", name+".pieces"))
			wantIDs := readLines(t, filepath.Join("testdata", name+".ids"))
			wantText := readLines(t, filepath.Join("testdata", name+".decoded"))
			if len(wantPieces) != len(corpus) || len(wantIDs) != len(corpus) || len(wantText) != len(corpus) {
				t.Fatalf("fixture lengths %d %d %d, corpus %d", len(wantPieces), len(wantIDs), len(wantText), len(corpus))
			}
			bad := 0
			for i, line := range corpus {
				got := sp.Encode(line)
				gotIDs := sp.EncodeIDs(line)
				ids := make([]string, len(gotIDs))
				for j, id := range gotIDs {
					ids[j] = strconv.Itoa(id)
				}
				// Pieces are separated by single spaces; a piece may hold a
				// tab or a form feed, which spm_encode writes as they are.
				var pieces []string
				if wantPieces[i] != "" {
					pieces = strings.Split(wantPieces[i], " ")
				}
				if g := strings.Join(got, " "); g != wantPieces[i] || strings.Join(ids, " ") != wantIDs[i] {
					if bad++; bad <= 5 {
						t.Errorf("line %d %q:\n got  %s\n      %v\n want %s\n      %s", i+1, line, g, ids, wantPieces[i], wantIDs[i])
					}
					continue
				}
				if d := sp.Decode(pieces); d != wantText[i] {
					if bad++; bad <= 5 {
						t.Errorf("line %d: decode %q, want %q", i+1, d, wantText[i])
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%s: %d of %d lines differ from SentencePiece", name, bad, len(corpus))
			}
			t.Logf("%s (%s, %d pieces): %d lines identical to spm_encode/spm_decode", name, sp.ModelType(), sp.Size(), len(corpus))
		})
	}
}
