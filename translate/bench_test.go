package translate

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/onnxrun"
)

// Benchmark sizes: "realistic" is H=256, Vs=Vt=10000, one layer, where the
// decoder's arithmetic dominates; "tiny" (H=16, V=64) shows the per-step
// overhead of the Go and ORT calls themselves.
const (
	benchSrcLen = 20
	benchSteps  = 20
)

var benchSizes = []struct {
	name          string
	hidden, vocab int
}{{"realistic", 256, 10000}, {"tiny", 16, 64}}

// benchModel writes a random Bahdanau model of the given sizes.
func benchModel(b *testing.B, hidden, vocab int) string {
	b.Helper()
	needORT(b)
	cfg := attention.Config{Arch: attention.Bahdanau, Hidden: hidden, Layers: 1, SrcVocab: vocab, TgtVocab: vocab}
	w, _, err := attention.FromStateDict(randomStateDict(cfg, 42), attention.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	writeModelDir(b, dir, w, modelSpec{special: attention.DefaultSpecial, greedy: true})
	return dir
}

func benchRows(batch, vocab int) [][]int64 {
	r := rand.New(rand.NewSource(int64(batch)))
	rows := make([][]int64, batch)
	for i := range rows {
		rows[i] = make([]int64, benchSrcLen)
		for j := range rows[i] {
			rows[i][j] = int64(4 + r.Intn(vocab-4))
		}
	}
	return rows
}

// reportPerStep reports milliseconds per decoder step (one token for each
// row of the batch) and per output token.
func reportPerStep(b *testing.B, elapsed time.Duration, steps, tokens int) {
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(steps), "ms/step")
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(tokens), "ms/token")
}

// BenchmarkTranslateSteps decodes benchSteps steps per call with the steps
// engine (IoBindings over pooled, preallocated tensors) and with the loop
// engine, and BenchmarkPlainRunLoop the same with a Session.Run loop.
func BenchmarkTranslateSteps(b *testing.B) {
	for _, size := range benchSizes {
		b.Run("size="+size.name, func(b *testing.B) { benchEngines(b, size.hidden, size.vocab) })
	}
}

func benchEngines(b *testing.B, hidden, vocab int) {
	dir := benchModel(b, hidden, vocab)
	for _, engine := range []string{EngineSteps, EngineLoop} {
		tr, err := Open(dir, Options{Threads: 1, Engine: engine, MaxLen: benchSteps})
		if err != nil {
			b.Fatal(err)
		}
		for _, batch := range []int{1, 32} {
			rows := benchRows(batch, vocab)
			b.Run(fmt.Sprintf("engine=%s/batch=%d", engine, batch), func(b *testing.B) {
				steps, tokens := 0, 0
				start := time.Now()
				for i := 0; i < b.N; i++ {
					res, err := tr.TranslateIDs(context.Background(), rows)
					if err != nil {
						b.Fatal(err)
					}
					longest := 0
					for _, r := range res {
						tokens += len(r.Tokens)
						longest = max(longest, len(r.Tokens))
					}
					steps += longest
				}
				reportPerStep(b, time.Since(start), steps, tokens)
			})
		}
		tr.Close()
	}
	b.Run("engine=plain-run", func(b *testing.B) { benchPlainRun(b, dir, vocab) })
}

// benchPlainRun is the straightforward loop: Session.Run with Go tensors
// and fresh outputs at every step, as verify.Run does.
func benchPlainRun(b *testing.B, dir string, vocab int) {
	enc, err := onnxrun.Open(dir+"/encoder.onnx", onnxrun.Options{IntraOpThreads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	dec, err := onnxrun.Open(dir+"/decoder.onnx", onnxrun.Options{IntraOpThreads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	for _, batch := range []int{1, 32} {
		rows := benchRows(batch, vocab)
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			B := int64(batch)
			ids := make([]int64, 0, batch*benchSrcLen)
			lens := make([]int64, batch)
			for r, row := range rows {
				ids = append(ids, row...)
				lens[r] = int64(len(row))
			}
			steps, tokens := 0, 0
			start := time.Now()
			for i := 0; i < b.N; i++ {
				lensT := onnxrun.NewInt64([]int64{B}, lens)
				out, err := enc.Run(map[string]*onnxrun.Tensor{
					attention.InSourceIDs:     onnxrun.NewInt64([]int64{B, benchSrcLen}, ids),
					attention.InSourceLengths: lensT,
				})
				if err != nil {
					b.Fatal(err)
				}
				h, c, e := out[attention.OutHidden], out[attention.OutCell], out[attention.OutEncoder]
				in := make([]int64, batch)
				for r := range in {
					in[r] = attention.DefaultSpecial.SOS
				}
				done := make([]bool, batch)
				for step := 0; step < benchSteps; step++ {
					res, err := dec.Run(map[string]*onnxrun.Tensor{
						attention.InInputIDs: onnxrun.NewInt64([]int64{B}, in), attention.InHidden: h, attention.InCell: c,
						attention.InEncoderOutputs: e, attention.InSourceLengths: lensT,
					})
					if err != nil {
						b.Fatal(err)
					}
					lp, _ := res[attention.OutLogProbs].Float32s()
					at, _ := res[attention.OutAttention].Float32s()
					next := make([]int64, batch)
					running := false
					for r := range next {
						next[r] = decode.Argmax(lp[r*vocab : (r+1)*vocab])
						if !done[r] {
							tokens++
							_ = append([]float32(nil), at[r*benchSrcLen:(r+1)*benchSrcLen]...)
							done[r] = next[r] == attention.DefaultSpecial.EOS
							running = running || !done[r]
						}
					}
					steps++
					in, h, c = next, res[attention.OutNextHidden], res[attention.OutNextCell]
					if !running {
						break
					}
				}
			}
			reportPerStep(b, time.Since(start), steps, tokens)
		})
	}
}
