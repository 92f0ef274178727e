package onmttok_test

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkTokenize tokenizes and detokenizes the lines of
// $ONMTTOK_BENCH_TEXT (testdata/text.txt when unset) under the option sets
// of the two trained fixture models; internal/bench/onmttok.sh runs it beside
// pyonmttok on the same text and reports lines per second.
func BenchmarkTokenize(b *testing.B) {
	path := os.Getenv("ONMTTOK_BENCH_TEXT")
	if path == "" {
		path = "testdata/text.txt"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	byName := map[string]map[string]any{}
	for _, s := range readFixtures(b, "testdata/expected.jsonl") {
		byName[s.Set] = s.Kwargs
	}
	for _, name := range []string{"bpe_fixture_model", "sp_fixture_model", "onmt_docs"} {
		tok := fixtureTokenizer(b, byName[name])
		b.Run(name+"/tokenize", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tok.Tokenize(lines[i%len(lines)])
			}
		})
		toks := make([][]string, len(lines))
		for i, l := range lines {
			toks[i] = tok.Tokenize(l)
		}
		b.Run(name+"/detokenize", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tok.Detokenize(toks[i%len(toks)])
			}
		})
	}
}
