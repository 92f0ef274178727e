package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/mtscore"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
	"github.com/attnx/attnx/verify"
)

// srcVerify is attnx verify --src: a user's test set decoded with the
// exported graphs and with PyTorch, chunk by chunk.
type srcVerify struct {
	src   string
	refs  []string
	chunk int
	steps int // 0: 2n+10 of the longest source
}

// SrcOutcome is verify --src's result.
type SrcOutcome struct {
	Source    string `json:"source"`
	Sentences int    `json:"sentences"`
	Blank     int    `json:"blank"`
	Identical int    `json:"identical"`
	// NearTies counts the sentences that part from PyTorch's at a near tie
	// (PyTorch's best two log-probs closer than the measured drift), which
	// the spec's tolerance allows; they are not identical.
	NearTies int `json:"near_ties"`
	// Decoding says how both sides decoded: greedily, or with the beam
	// search (and rules) translate runs by default for the model.
	Decoding string `json:"decoding"`
	// MinSteps and Steps are the smallest and largest output limits the
	// sentences were decoded with (translate --src's, per sentence).
	MinSteps int  `json:"min_steps"`
	Steps    int  `json:"steps"`
	Chunks   int  `json:"chunks"`
	StepsOK  bool `json:"steps_within_tolerance"`
	// Weights is the model's precision. For int8 and int4 the steps are
	// not judged against the float32 tolerance: each chunk's greedy
	// decodes must agree with PyTorch's float32 ones on MinAgreement of
	// its sentences, as plain verify judges them, and StepsOK says so.
	Weights      string   `json:"weights"`
	MinAgreement float64  `json:"min_agreement,omitempty"`
	OK           bool     `json:"ok"`
	Failures     []string `json:"failures,omitempty"`
	// BLEU lines (sacreBLEU's): attnx against PyTorch, and each against
	// the references.
	AttnxVsPyTorch string   `json:"bleu_attnx_vs_pytorch"`
	AttnxVsRef     []string `json:"bleu_attnx_vs_ref,omitempty"`
	PyTorchVsRef   []string `json:"bleu_pytorch_vs_ref,omitempty"`
	Attnx          []string `json:"attnx"`
	PyTorch        []string `json:"pytorch"`
}

// runVerifySrc tokenises the test set with the model's own tokenizer,
// runs verify.Check on chunks of it (every step of every sentence within
// the float32 tolerance, greedy decoding compared token by token) and
// scores both decodes with BLEU.
func runVerifySrc(opt verify.Options, sv srcVerify, asJSON bool) error {
	lines, err := readSegments(sv.src)
	if err != nil {
		return fmt.Errorf("--src: %w", err)
	}
	var refs [][]string
	for _, r := range sv.refs {
		l, err := readSegments(r)
		if err != nil {
			return fmt.Errorf("--ref: %w", err)
		}
		if len(l) != len(lines) {
			return fmt.Errorf("--ref %s has %d lines and --src %s has %d: a reference needs one line per source", r, len(l), sv.src, len(lines))
		}
		refs = append(refs, l)
	}
	// The Translator decodes as attnx translate does by default (the
	// model's own settings): its output limits are the ones both sides
	// decode each sentence with.
	tr, err := translate.Open(opt.ModelDir, translate.Options{Backend: opt.Backend, Threads: 1, Engine: translate.EngineSteps})
	if err != nil {
		return translateCLIError(err)
	}
	defer tr.Close()
	all := make([][]int64, len(lines)) // nil: a blank line
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ids, err := tr.SourceIDs(l)
		if err != nil {
			return translateCLIError(fmt.Errorf("--src %s line %d (%q): %w", sv.src, i+1, l, err))
		}
		all[i] = ids
	}
	// Each sentence's limit is the one translate --src gives it (the
	// model's, per the toolkit's batch where it depends on one), unless
	// --steps sets one for all; the sentences are checked in chunks of
	// equal limits, in that order.
	limits := tr.CorpusLimits(all, translate.CorpusOptions{})
	var idx []int
	for i, r := range all {
		if r != nil {
			idx = append(idx, i)
			if sv.steps > 0 {
				limits[i] = sv.steps
			}
		}
	}
	if len(idx) == 0 {
		return fmt.Errorf("--src %s has no sentences", sv.src)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return limits[a] - limits[b] })
	rows := make([][]int64, len(idx))
	for k, i := range idx {
		rows[k] = all[i]
	}
	out := SrcOutcome{Source: sv.src, Sentences: len(lines), Blank: len(lines) - len(rows), StepsOK: true,
		Attnx: make([]string, len(lines)), PyTorch: make([]string, len(lines))}
	out.Decoding = "greedy decoding"
	if tr.Info().Weights.Reduced() {
		// A float32 reference meets reduced weights as an agreement rate,
		// measured greedily on both sides under attnx's rules.
		out.Decoding = fmt.Sprintf("greedy decoding on both sides (%s weights are measured greedily against float32 PyTorch; translate decodes them as the model's defaults say)", tr.Info().Weights)
	}
	if opt.Beam > 0 {
		out.Decoding = fmt.Sprintf("beam search K=%d under %s rules, alpha %g", opt.Beam, cmp.Or(opt.Search.Rules, translate.RulesSpec), opt.LengthPenalty)
	}
	out.MinSteps, out.Steps = limits[idx[0]], limits[idx[len(idx)-1]]
	opt.Rows = false
	tmp, err := os.MkdirTemp("", "attnx-verify-src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bar := newProgress(len(rows), "verify --src")
	for start := 0; start < len(rows); {
		// A chunk: at most sv.chunk sentences of one limit.
		end := start + 1
		for end < len(rows) && end-start < sv.chunk && limits[idx[end]] == limits[idx[start]] {
			end++
		}
		chunk := rows[start:end]
		opt.Steps = limits[idx[start]]
		in := filepath.Join(tmp, fmt.Sprintf("chunk%d.safetensors", out.Chunks))
		if err := verify.WriteInputs(in, chunk); err != nil {
			return err
		}
		opt.Inputs = in
		res, err := verify.Check(opt)
		if err != nil {
			bar.Finish()
			return fmt.Errorf("sentences %d-%d: %w", idx[start]+1, idx[start+len(chunk)-1]+1, err)
		}
		out.Chunks++
		if !res.OK {
			out.StepsOK = false
			out.Failures = append(out.Failures, fmt.Sprintf("%s: %s", chunkName(idx[start:end], opt.Steps), firstFailure(res)))
		}
		out.Weights, out.MinAgreement = string(res.Weights), res.MinAgreement
		var got, want [][]int64
		want = res.ReferenceGreedy
		switch {
		case opt.Beam > 0 && len(res.Beam) > 0:
			// The best hypotheses of the decoding core's beam search and
			// of the reference's, under the same rules.
			bc := res.Beam[0]
			got, want = bc.Tokens, bc.Reference
			if !bc.Identical {
				out.StepsOK = false
				out.Failures = append(out.Failures, fmt.Sprintf("%s: %s: %s", chunkName(idx[start:end], opt.Steps), bc.Engine, bc.Detail))
			} else {
				for k := range got {
					if !slices.Equal(got[k], want[k]) {
						out.NearTies++ // a swap the check allowed
					}
				}
			}
		case len(res.Greedy) > 0:
			g := res.Greedy[len(res.Greedy)-1]
			got = g.Tokens
			tied := map[int]bool{}
			for _, nt := range g.NearTies {
				tied[nt.Row] = true
			}
			out.NearTies += len(tied)
		default:
			// Reduced precision: Check judged the agreement of its graphs'
			// decodes (res.OK) but keeps no tokens; these are the
			// sentences' own, decoded greedily by the steps engine within
			// the steps PyTorch's reference ran.
			decoded, err := tr.TranslateIDsCall(context.Background(), chunk, translate.CallOptions{MaxLen: opt.Steps, WithoutAttention: true, Beam: 1, Rules: translate.RulesSpec})
			if err != nil {
				bar.Finish()
				return fmt.Errorf("sentences %d-%d: %w", idx[start]+1, idx[start+len(chunk)-1]+1, err)
			}
			for _, d := range decoded {
				got = append(got, d.Tokens)
			}
		}
		for k := range chunk {
			i := idx[start+k]
			out.Attnx[i] = tr.TargetText(got[k])
			out.PyTorch[i] = tr.TargetText(want[k])
			if slices.Equal(got[k], want[k]) {
				out.Identical++
			}
		}
		bar.Set(end, "verify --src")
		start = end
	}
	bar.Finish()
	bleu := func(hyps []string, refs [][]string) string {
		s, err := mtscore.BLEU(hyps, refs, mtscore.BLEUOptions{})
		if err != nil {
			return err.Error()
		}
		return mtscore.Line(s, 2)
	}
	out.AttnxVsPyTorch = bleu(out.Attnx, [][]string{out.PyTorch})
	if len(refs) > 0 {
		out.AttnxVsRef = append(out.AttnxVsRef, bleu(out.Attnx, refs))
		out.PyTorchVsRef = append(out.PyTorchVsRef, bleu(out.PyTorch, refs))
	}
	// Check's verdict: every step within tolerance, greedy tokens equal
	// but at counted near ties (which no CPU can promise away).
	out.OK = out.StepsOK
	if asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		writeSrcOutcome(out, opt.Checkpoint)
	}
	if !out.OK {
		return &exitError{exitFailure}
	}
	return nil
}

// chunkName names a chunk's sentences (line numbers from 1) and their
// output limit.
func chunkName(lines []int, limit int) string {
	sorted := slices.Clone(lines)
	slices.Sort(sorted)
	var nums []string
	for _, i := range sorted[:min(len(sorted), 6)] {
		nums = append(nums, strconv.Itoa(i+1))
	}
	if len(sorted) > 6 {
		nums = append(nums, "...")
	}
	return fmt.Sprintf("%d sentences of max_len %d (lines %s)", len(lines), limit, strings.Join(nums, ", "))
}

func firstFailure(res *verify.Outcome) string {
	// Reduced weights are judged by agreement, a rate: say it as one.
	for _, a := range res.Agreement {
		if !a.OK {
			return fmt.Sprintf("%s: %.0f%% of the sentences identical to PyTorch's (%d of %d) < --min-agreement %g", a.Graph, 100*a.SentenceRate, a.SentencesIdentical, a.Sentences, res.MinAgreement)
		}
	}
	for _, g := range res.Greedy {
		if !g.Identical {
			return g.Graph + ": " + g.Detail
		}
	}
	if !res.StepTokensIdentical {
		return "the step argmax tokens differ"
	}
	return "an output is outside the tolerance (run verify --inputs on these sentences for details)"
}

func writeSrcOutcome(o SrcOutcome, ckpt checkpoint.Files) {
	w := stdout
	limit := fmt.Sprintf("max_len %d", o.Steps)
	if o.MinSteps != o.Steps {
		limit = fmt.Sprintf("max_len %d to %d per sentence, as translate --src decodes it", o.MinSteps, o.Steps)
	}
	fmt.Fprintf(w, "verify --src %s against %s: %s, %s, %s, in %s\n",
		o.Source, ckpt.String(), fmt.Sprintf("%d %s (%d blank, skipped)", o.Sentences, plural(int64(o.Sentences), "sentence", "sentences"), o.Blank), o.Decoding, limit, fmt.Sprintf("%d %s", o.Chunks, plural(int64(o.Chunks), "chunk", "chunks")))
	verdict := "every output of every step within the float32 tolerance, step-isolated"
	if o.Weights != "" && o.Weights != string(quant.PrecisionFP32) {
		verdict = fmt.Sprintf("%s weights: each chunk's greedy decodes agree with the float32 PyTorch model's on at least %.0f%% of its sentences (deviations reported by plain verify, not judged)", o.Weights, 100*o.MinAgreement)
	}
	if !o.StepsOK {
		verdict = "OUTSIDE the tolerance:\n    " + strings.Join(o.Failures, "\n    ")
		if o.Weights != "" && o.Weights != string(quant.PrecisionFP32) {
			verdict = "BELOW the agreement asked for:\n    " + strings.Join(o.Failures, "\n    ")
		}
	}
	fmt.Fprintf(w, "  steps      %s\n", verdict)
	n := o.Sentences - o.Blank
	ties := ""
	if o.NearTies > 0 {
		ties = fmt.Sprintf("; %d part from it at a near tie, which the tolerance allows", o.NearTies)
	}
	fmt.Fprintf(w, "  sentences  %d of %d identical to PyTorch's (%.1f%%)%s\n", o.Identical, n, 100*float64(o.Identical)/float64(n), ties)
	fmt.Fprintf(w, "  attnx vs PyTorch    %s\n", o.AttnxVsPyTorch)
	for i := range o.AttnxVsRef {
		fmt.Fprintf(w, "  attnx vs --ref      %s\n", o.AttnxVsRef[i])
		fmt.Fprintf(w, "  PyTorch vs --ref    %s\n", o.PyTorchVsRef[i])
	}
	if o.OK {
		if o.Identical == n {
			fmt.Fprintln(w, "OK: on this test set the ONNX graphs translate exactly as PyTorch does")
		} else {
			fmt.Fprintf(w, "OK: on this test set the ONNX graphs translate as PyTorch does, but at %d near ties\n", o.NearTies)
		}
	} else {
		fmt.Fprintln(w, "MISMATCH: see above")
	}
}
