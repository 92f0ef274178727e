package attention_test

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	fx "github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/ortest"
	"github.com/attnx/attnx/onnxrun"
)

// BenchmarkBeamGraph times beam.onnx against greedy.onnx (one ONNX
// Runtime thread), per batch of source sentences of 20 tokens, max_len 12
// (the demo's dates are 10 tokens and EOS): greedy, then K = 1, 4 and 8,
// at batch 1 and 32. Models: the demo's Luong model (H=64... tiny: the
// per-node cost of the graph dominates) and a random Luong model of H=256,
// L=2, Vt=8000 (where the weights do).
func BenchmarkBeamGraph(b *testing.B) {
	ortest.Require(b)
	b.Run("demo", func(b *testing.B) {
		benchBeamGraph(b, fx.Weights(b, filepath.Join(filepath.Dir(fx.Root(b)), "demo", "luong.pt")))
	})
	b.Run("H256_V8000", func(b *testing.B) {
		ckpt := filepath.Join(b.TempDir(), "model.safetensors")
		cfg := attention.Config{Arch: attention.LuongGeneral, Cell: attention.LSTM, Hidden: 256, Embedding: 256, Layers: 2, SrcVocab: 8000, TgtVocab: 8000}
		fx.WriteRandomCheckpoint(b, ckpt, cfg, 1)
		benchBeamGraph(b, fx.Weights(b, ckpt))
	})
}

func benchBeamGraph(b *testing.B, w *attention.Weights) {
	sp := attention.DefaultSpecial
	open := func(build func() (*builder.Model, error)) *onnxrun.Session {
		m, err := build()
		if err != nil {
			b.Fatal(err)
		}
		return ortest.Open(b, m, onnxrun.Options{IntraOpThreads: 1})
	}
	greedy := open(func() (*builder.Model, error) { return attention.Greedy(w, sp, attention.BuildOptions{}) })
	beam := open(func() (*builder.Model, error) { return attention.Beam(w, sp, attention.BuildOptions{}) })
	r := rand.New(rand.NewSource(1))
	for _, batch := range []int{1, 32} {
		const srcLen = 20
		ids, lens := make([]int64, batch*srcLen), make([]int64, batch)
		for i := range ids {
			ids[i] = 4 + r.Int63n(int64(w.Config.SrcVocab-4))
		}
		for i := range lens {
			lens[i] = srcLen
		}
		feeds := map[string]*onnxrun.Tensor{
			attention.InSourceIDs:     onnxrun.NewInt64([]int64{int64(batch), srcLen}, ids),
			attention.InSourceLengths: onnxrun.NewInt64([]int64{int64(batch)}, lens),
			attention.InMaxLen:        onnxrun.Scalar(int64(12)),
		}
		run := func(b *testing.B, s *onnxrun.Session, feeds map[string]*onnxrun.Tensor) {
			start := cpuTime(b)
			for b.Loop() {
				if _, err := s.Run(feeds); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU time per run: steadier than wall time on
			// a shared machine.
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		}
		b.Run(fmt.Sprintf("greedy/batch=%d", batch), func(b *testing.B) { run(b, greedy, feeds) })
		for _, k := range []int64{1, 4, 8} {
			bf := map[string]*onnxrun.Tensor{attention.InBeamSize: onnxrun.Scalar(k), attention.InLengthPenalty: onnxrun.Scalar(1.0)}
			for name, v := range feeds {
				bf[name] = v
			}
			b.Run(fmt.Sprintf("beam/K=%d/batch=%d", k, batch), func(b *testing.B) { run(b, beam, bf) })
		}
	}
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
