package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/reference"
)

// python runs one of the PyTorch reference's scripts (reference.Script,
// reference.BenchScript) with c.Python, from c.RefDir or the copy embedded
// in attnx, and returns its stdout; the error carries the script's stderr.
func (c *Config) python(script string, args ...string) ([]byte, error) {
	return reference.Runner{Python: c.Python, Dir: c.RefDir}.Run(context.Background(), script, args...)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// pyOut is bench.py's JSON.
type pyOut struct {
	EncoderMs []float64 `json:"encoder_ms"`
	DecodeMs  []float64 `json:"decode_ms"`
	Reps      int       `json:"reps"`
	Threads   int       `json:"threads"`
	PeakRSSMB float64   `json:"peak_rss_mb"`
	Tokens    [][]int64 `json:"tokens"`
	Torch     string    `json:"torch"`
	BLAS      *BLASInfo `json:"blas"`
}

// pytorch runs bench.py on the same checkpoint and inputs: greedy
// decoding, or (k > 1) the reference's beam search of width k.
func (c *Config) pytorch(work string, m *model, S, B, T int, ids, lens []int64, k int) (Result, pyTorchInfo, error) {
	r := Result{Name: EnginePyTorch, Weights: string(quant.PrecisionFP32), Batch: B}
	if k > 1 {
		r.Beam = k
	}
	var none pyTorchInfo
	in := filepath.Join(work, string(m.arch), fmt.Sprintf("inputs_s%d_b%d.safetensors", S, B))
	if err := writeInputs(in, B, S, ids, lens); err != nil {
		return r, none, err
	}
	out, err := c.python(reference.BenchScript, "--checkpoint", m.ckpt, "--inputs", in,
		"--steps", strconv.Itoa(c.Steps), "--threads", strconv.Itoa(T), "--warmup", strconv.Itoa(c.Warmup),
		"--min-reps", strconv.Itoa(c.MinReps), "--max-reps", strconv.Itoa(c.MaxReps),
		"--min-time", strconv.FormatFloat(c.MinTime.Seconds(), 'f', -1, 64),
		"--beam", strconv.Itoa(k), "--eos", strconv.FormatInt(attention.DefaultSpecial.EOS, 10))
	if err != nil {
		return r, none, err
	}
	var p pyOut
	if err := json.Unmarshal(out, &p); err != nil {
		return r, none, fmt.Errorf("bench.py printed %q, not its JSON: %w", lastLine(out), err)
	}
	if len(p.DecodeMs) == 0 || len(p.Tokens) != B {
		return r, none, fmt.Errorf("bench.py returned %d times and %d token rows, want > 0 and %d", len(p.DecodeMs), len(p.Tokens), B)
	}
	if p.Threads != T {
		return r, none, fmt.Errorf("bench.py ran with %d torch threads, want %d", p.Threads, T)
	}
	r.fill(p.EncoderMs, p.DecodeMs, c.Steps)
	r.PeakRSSMB = p.PeakRSSMB
	r.tokens = make([]int64, c.Steps*B)
	for b, row := range p.Tokens {
		if len(row) != c.Steps {
			return r, none, fmt.Errorf("bench.py decoded %d steps, want %d", len(row), c.Steps)
		}
		for s, t := range row {
			r.tokens[s*B+b] = t
		}
	}
	r.Note = "bench.py process: torch " + p.Torch
	if p.BLAS != nil {
		r.Note += ", BLAS " + p.BLAS.Kind
	}
	return r, pyTorchInfo{Version: p.Torch, BLAS: p.BLAS}, nil
}
