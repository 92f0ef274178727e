package bench

import (
	"fmt"
	"strings"
)

// Result is one engine at one configuration. Times are wall-clock; a token
// is one row's output at one step, so a step of batch B makes B tokens.
type Result struct {
	Name string `json:"name"`
	// Weights is the precision of the model the engine ran: fp32, int8 or
	// int4 for the attnx engines, fp32 for the others.
	Weights string `json:"weights"`
	Arch    string `json:"arch"`
	SrcLen  int    `json:"src_len"`
	Batch   int    `json:"batch"`
	Threads int    `json:"threads"`
	// Beam is the beam width K of a beam search row, 0 for greedy decoding.
	Beam int `json:"beam,omitempty"`
	// MsPerTokenMedian and MsPerTokenP90 are the decode time (encoder
	// excluded) per token over the repetitions.
	MsPerTokenMedian float64 `json:"ms_per_token_median"`
	MsPerTokenP90    float64 `json:"ms_per_token_p90"`
	// MsPerTokenMin is the fastest repetition's: the least disturbed by
	// other load on a shared machine.
	MsPerTokenMin float64 `json:"ms_per_token_min"`
	// MsPerStepMedian is MsPerTokenMedian * Batch.
	MsPerStepMedian float64 `json:"ms_per_step_median"`
	// MsPerSentenceMedian is the decode time per row (MsPerTokenMedian *
	// Steps): with beam search, for all K hypotheses of the row.
	MsPerSentenceMedian float64 `json:"ms_per_sentence_median"`
	// VsGreedy is a beam search row's ms per sentence over the same
	// engine's greedy decoding at the same configuration.
	VsGreedy float64 `json:"vs_greedy,omitempty"`
	// TokensPerS is 1000 / MsPerTokenMedian.
	TokensPerS float64 `json:"tokens_per_s"`
	// EncoderMsMedian is the encoder's time per batch (0 for the floor).
	EncoderMsMedian float64 `json:"encoder_ms_median"`
	// PeakRSSMB is the peak resident set while the engine ran: bench.py's
	// own process for PyTorch, this process (reset before each engine) for
	// the others.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	Reps      int     `json:"reps"`
	// ModelBytes is the size of the graph files the engine loads
	// (encoder.onnx and decoder.onnx for the step loops, greedy.onnx for
	// attnx-loop); 0 for the other engines.
	ModelBytes int64 `json:"model_bytes,omitempty"`
	// SpeedupVsPyTorch is PyTorch eager's ms per token over this engine's.
	SpeedupVsPyTorch float64 `json:"speedup_vs_pytorch,omitempty"`
	// SpeedupVsFP32 is, for an attnx engine at reduced precision, the same
	// engine's fp32 ms per token over this one's.
	SpeedupVsFP32 float64 `json:"speedup_vs_fp32,omitempty"`
	// RatioToFloor is this engine's ms per token over the (float32)
	// floor's.
	RatioToFloor float64 `json:"ratio_to_floor,omitempty"`
	// TokensMatchPyTorch tells whether the tokens equal PyTorch's (with
	// beam search, the best hypothesis', PyTorch's beam search's).
	TokensMatchPyTorch *bool `json:"tokens_match_pytorch,omitempty"`
	// NA, when set, says why the engine could not run here ("n/a").
	NA string `json:"na,omitempty"`
	// Note adds how the figure was obtained, where it differs.
	Note string `json:"note,omitempty"`

	tokens []int64 // step-major [steps*B], first repetition (beam: the best hypothesis)
}

// engineName is the result's engine with its beam width, as progress lines
// and errors name it.
func (r Result) engineName() string { return variantName(r.Name, r.Beam) }

func variantName(engine string, k int) string {
	if k > 1 {
		return fmt.Sprintf("%s beam %d", engine, k)
	}
	return engine
}

// Target is one of the goals, checked at batch 1 and 1 thread.
type Target struct {
	Config string  `json:"config"`
	Name   string  `json:"name"`
	Want   string  `json:"want"`
	Got    float64 `json:"got"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail"`
}

// Report is the benchmark's outcome, as printed with --json.
type Report struct {
	Config struct {
		Checkpoint string   `json:"checkpoint,omitempty"`
		Archs      []string `json:"archs"`
		Hidden     int      `json:"hidden"`
		Layers     int      `json:"layers"`
		SrcVocab   int      `json:"src_vocab"`
		TgtVocab   int      `json:"tgt_vocab"`
		SrcLens    []int    `json:"src_lens"`
		Batches    []int    `json:"batches"`
		Threads    []int    `json:"threads"`
		Steps      int      `json:"steps"`
		EOS        int64    `json:"eos"`
		EOSMethod  string   `json:"eos_method"`
		MinReps    int      `json:"min_reps"`
		MinTimeS   float64  `json:"min_time_s"`
		ORT        string   `json:"onnxruntime"`
		Torch      string   `json:"torch,omitempty"`
		// Weights lists the precisions the attnx engines ran at.
		Weights []string `json:"weights"`
		// TorchBLAS is the BLAS PyTorch computed with.
		TorchBLAS *BLASInfo `json:"torch_blas,omitempty"`
	} `json:"config"`
	Results []Result `json:"results"`
	// Ratios maps "ARCH S=.. B=.. T=.." to named ratios at that configuration:
	// lean_vs_pytorch, steps_vs_pytorch, loop_vs_pytorch (speedups),
	// steps_vs_torch_onnx (torch-onnx ms / best attnx step loop ms),
	// loop_vs_steps (best step loop ms / loop ms), best_vs_floor (best attnx
	// ms / floor ms), all of greedy decoding over the fp32 models;
	// ENGINE_WEIGHTS_vs_fp32 (such as attnx-loop_int8_vs_fp32: the engine's
	// fp32 ms over its ms at that precision, greedy decoding); and for each
	// beam width K, over the fp32 models, lean_beamK_vs_greedy,
	// steps_beamK_vs_greedy, loop_beamK_vs_greedy and
	// pytorch_beamK_vs_greedy (ms per sentence over the same engine's
	// greedy) and lean_beamK_vs_pytorch (PyTorch beam search ms over the
	// decoding core's).
	Ratios  map[string]map[string]float64 `json:"ratios"`
	Targets []Target                      `json:"targets"`
	Notes   []string                      `json:"notes,omitempty"`
	// Warnings say when a figure is not what it seems, such as PyTorch
	// computing with the reference BLAS.
	Warnings []string `json:"warnings,omitempty"`
	// Profile summarises the CPU profile, when one was taken.
	Profile *ProfileSummary `json:"profile,omitempty"`
	// ProfileGo is the same for the native backend's lean step loop
	// (attnx-steps-lean-go): its kernels show under their own names.
	ProfileGo *ProfileSummary `json:"profile_go,omitempty"`
}

// BLASInfo is the BLAS PyTorch computed with, as bench.py found it.
type BLASInfo struct {
	// Kind is openblas, mkl, blis, reference (the netlib reference BLAS)
	// or unknown.
	Kind string `json:"kind"`
	// Libraries are the BLAS libraries mapped into bench.py's process.
	Libraries []string `json:"libraries"`
	// Build is torch's own build setting (BLAS_INFO=...).
	Build string `json:"build"`
	// OpenBLASThreads is OPENBLAS_NUM_THREADS in bench.py's process (set to
	// the thread count measured unless the caller set it).
	OpenBLASThreads string `json:"openblas_num_threads"`
}

// blasWarning returns the warning PyTorch's figures need when they were
// computed with b (nil: PyTorch did not run), or "" for an optimised BLAS.
func blasWarning(b *BLASInfo) string {
	if b == nil || b.Kind == "openblas" || b.Kind == "mkl" || b.Kind == "blis" {
		return ""
	}
	return fmt.Sprintf("PyTorch computed with the %s BLAS (%s): its figures are not those of a PyTorch users install, whose classifier product runs many times faster; install libopenblas0-pthread (make bench does) and run again", b.Kind, b.describe())
}

func (b *BLASInfo) describe() string {
	if len(b.Libraries) == 0 {
		return "no BLAS library found mapped; torch " + b.Build
	}
	return strings.Join(b.Libraries, ", ")
}

func (r Result) brief() string {
	if r.NA != "" {
		return "n/a: " + r.NA
	}
	return fmt.Sprintf("%.4f ms/token (p90 %.4f), encoder %.3f ms, %d reps, peak RSS %.0f MB", r.MsPerTokenMedian, r.MsPerTokenP90, r.EncoderMsMedian, r.Reps, r.PeakRSSMB)
}
