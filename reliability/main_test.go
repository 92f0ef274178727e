package reliability

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/procstat"
	"github.com/attnx/attnx/translate"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// attnxBinary builds cmd/attnx once per test binary and returns its path.
// It is built with the attnx_crashpoints tag, which adds modeldir's test
// hooks: ATTNX_CRASH_AT=POINT makes it SIGKILL itself at that point of the
// model directory swap, ATTNX_SWAP=rename forces the rename fallback. A
// normal build has no such code; without those variables the binary
// behaves as a normal one.
func attnxBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "attnx-reliability-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "attnx")
		out, err := exec.Command("go", "build", "-tags", "attnx_crashpoints", "-o", binPath, "../cmd/attnx").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build -tags attnx_crashpoints ../cmd/attnx: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// luongDotStateDict returns a random Luong-dot state_dict with the spec's
// keys and PyTorch's shapes (L=1), values from a seeded xorshift so that
// tens of millions of them are cheap.
func luongDotStateDict(H, Vs, Vt int64, seed uint64) map[string]*builder.Tensor {
	s := seed | 1
	rnd := func(n int64) []float32 {
		v := make([]float32, n)
		for i := range v {
			s ^= s << 13
			s ^= s >> 7
			s ^= s << 17
			v[i] = float32(int64(s>>40)-(1<<23)) / float32(1<<23) * 0.2
		}
		return v
	}
	shapes := map[string][]int64{
		"encoder.embedding.weight":  {Vs, H},
		"encoder.lstm.weight_ih_l0": {4 * H, H},
		"encoder.lstm.weight_hh_l0": {4 * H, H},
		"encoder.lstm.bias_ih_l0":   {4 * H},
		"encoder.lstm.bias_hh_l0":   {4 * H},
		"decoder.embedding.weight":  {Vt, H},
		"decoder.lstm.weight_ih_l0": {4 * H, H},
		"decoder.lstm.weight_hh_l0": {4 * H, H},
		"decoder.lstm.bias_ih_l0":   {4 * H},
		"decoder.lstm.bias_hh_l0":   {4 * H},
		"decoder.classifier.weight": {Vt, 2 * H},
		"decoder.classifier.bias":   {Vt},
	}
	sd := map[string]*builder.Tensor{}
	for k, dims := range shapes {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		sd[k] = builder.FloatTensor(dims, rnd(n))
	}
	return sd
}

func writeCheckpoint(t *testing.T, path string, sd map[string]*builder.Tensor) string {
	t.Helper()
	if err := checkpoint.WriteSafetensors(path, sd, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// memSample is the Go heap after a full GC and the process's RSS after
// freed memory, Go's and the C allocator's, is returned to the system.
type memSample struct{ heap, rss uint64 }

func sampleMem() memSample {
	runtime.GC()
	procstat.ReleaseFreeMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heap: ms.HeapAlloc, rss: procstat.RSS()}
}

func (m memSample) String() string {
	return fmt.Sprintf("heap %.2f MiB, RSS %.1f MiB", float64(m.heap)/(1<<20), float64(m.rss)/(1<<20))
}

// growth is (b-a)/a, or +Inf when a is 0 and b is not.
func growth(a, b uint64) float64 {
	if a == 0 {
		if b == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (float64(b) - float64(a)) / float64(a)
}

func asInputError(err error, target **translate.InputError) bool { return errors.As(err, target) }
