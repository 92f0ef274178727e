package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
)

func TestCorpusSources(t *testing.T) {
	rows := corpusSources(200, 10, 40, 100, 7)
	lo, hi := 100, 0
	for _, r := range rows {
		lo, hi = min(lo, len(r)), max(hi, len(r))
		for _, id := range r {
			if id < 4 || id >= 100 {
				t.Fatalf("id %d outside [4, 100)", id)
			}
		}
	}
	if lo != 10 || hi != 40 {
		t.Errorf("lengths %d..%d, want 10..40", lo, hi)
	}
	if again := corpusSources(200, 10, 40, 100, 7); len(again[5]) != len(rows[5]) || again[5][0] != rows[5][0] {
		t.Error("not seeded")
	}
}

// TestRunCorpusSmall runs the file-translation benchmark on a tiny model:
// every engine and configuration gives a row, and float32 attnx decodes
// exactly as the PyTorch reference (greedy and beam search).
func TestRunCorpusSmall(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	testenv.Torch(t)
	prof := filepath.Join(t.TempDir(), "cpu")
	rep, err := RunCorpus(CorpusConfig{Arch: attention.Arch("onmt-general"), Hidden: 16, Layers: 2, Vocab: 60, Sentences: 23,
		MinSrc: 3, MaxSrc: 9, OutLen: 6, BatchSents: 5, Beams: []int{1, 3}, Threads: []int{1, 2},
		Weights: []quant.Precision{quant.PrecisionFP32, quant.PrecisionInt8}, Seed: 3, Python: testenv.Python, CPUProfile: prof})
	if err != nil {
		t.Fatal(err)
	}
	// a CPU profile per native row, named for it
	for _, r := range rep.Rows {
		if r.Engine != "attnx" || r.Backend != onnxrun.BackendGo {
			continue
		}
		p := fmt.Sprintf("%s.%s-beam%d-%dt-%dl.pprof", prof, r.Weights, r.Beam, r.Threads, r.Lanes)
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("row %s beam %d %dt %dl: no CPU profile at %s (%v)", r.Weights, r.Beam, r.Threads, r.Lanes, p, err)
		}
	}
	// per beam: PyTorch at 1 and 2 threads; attnx at 1 thread (1 lane)
	// and at 2 (2 lanes, 1 lane), per precision
	if len(rep.Rows) != 2*(2+2*3) {
		t.Fatalf("%d rows", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.SentencesPerS <= 0 || r.TokensPerS <= 0 || r.Seconds <= 0 {
			t.Errorf("row %+v", r)
		}
		if r.Engine == "attnx" && (r.VsPyTorch <= 0 || (r.Weights == "fp32" && r.Identical != 23) || r.Rules != "opennmt") {
			t.Errorf("attnx row %+v: want OpenNMT-py's search (the architecture's toolkit's), a speed-up and, at fp32, 23 of 23 sentences as PyTorch's", r)
		}
	}
	var b bytes.Buffer
	WriteCorpusTable(&b, rep)
	if !strings.Contains(b.String(), "23 sentences") || !strings.Contains(b.String(), "23/23") || !strings.Contains(b.String(), " opennmt ") {
		t.Errorf("table:\n%s", b.String())
	}
}
