package translate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkEnsemble translates onmt-avg's test set (48 sentences, beam 5
// and greedy) with member A alone, with the ensemble A+A of A and a copy
// of it (the same hypotheses, so the same search: what it costs beyond A
// is the second decoder's steps) and with the ensemble A+B of
// make_ensemble.sh's two checkpoints (other hypotheses, of other
// lengths), reporting sentences/s and output tokens/s (of the best
// hypotheses). An ensemble of N runs N decoders per step for one search:
// A+A should cost about twice A.
func BenchmarkEnsemble(b *testing.B) {
	needORT(b)
	data, err := os.ReadFile("../testdata/toolkits/onmt-avg/test.src")
	if err != nil {
		b.Fatal(err)
	}
	texts := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	dirs := exportMembersTB(b, "../testdata/toolkits/onmt-ensemble", false)
	twin := filepath.Join(b.TempDir(), "twin")
	if err := os.CopyFS(twin, os.DirFS(dirs[0])); err != nil {
		b.Fatal(err)
	}
	for _, beam := range []int{5, 1} {
		for _, c := range []struct {
			name string
			dirs []string
		}{{"A", dirs[:1]}, {"A+A", []string{dirs[0], twin}}, {"A+B", dirs}} {
			b.Run(fmt.Sprintf("beam%d/%s", beam, c.name), func(b *testing.B) {
				tr, err := OpenEnsemble(c.dirs, Options{Beam: beam, Threads: 1}, EnsembleOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				ctx := context.Background()
				if _, err := tr.Translate(ctx, texts); err != nil { // warm the pools
					b.Fatal(err)
				}
				b.ResetTimer()
				start, tokens := time.Now(), 0
				for range b.N {
					res, err := tr.Translate(ctx, texts)
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range res {
						tokens += len(r.Tokens)
					}
				}
				s := time.Since(start).Seconds()
				b.ReportMetric(float64(b.N*len(texts))/s, "sentences/s")
				b.ReportMetric(float64(tokens)/s, "tokens/s")
			})
		}
	}
}
