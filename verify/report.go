package verify

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
)

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISMATCH"
}

// WriteText prints the outcome as `attnx verify` does: one line per output
// (worst error over the steps), every step's rows when verbose, then the
// token and greedy comparisons and the verdict.
func (o *Outcome) WriteText(w io.Writer, verbose bool) {
	c := o.Config
	fmt.Fprintf(w, "verify %s against %s\n", o.Model, filepath.Base(o.Checkpoint))
	reduced := o.Weights.Reduced()
	if reduced {
		fmt.Fprintf(w, "  model %s, %s weights; batch %d, src_len %d, %d steps\n", c, o.Weights, o.Batch, o.SrcLen, o.Steps)
		fmt.Fprintf(w, "  reduced-precision weights cannot meet the float32 tolerance: the deviations from float32 PyTorch are reported, and\n"+
			"  the greedy decodes must equal PyTorch's for at least %.2f%% of the sentences (--min-agreement)\n", 100*o.MinAgreement)
	} else {
		fmt.Fprintf(w, "  model %s; batch %d, src_len %d, %d steps; tolerance |a-b| <= %g + %g*|b|",
			c, o.Batch, o.SrcLen, o.Steps, o.Tolerance["atol"], o.Tolerance["rtol"])
		if o.ReferenceRounding {
			fmt.Fprintf(w, " + %d x PyTorch's own float32 rounding in b's row (measured against float64)", RoundingSlack)
		}
		fmt.Fprintln(w)
	}
	they, verb := "PyTorch", "computes"
	if o.Oracle != "" && o.Oracle != "reference" {
		they, verb = "your modules", "compute"
		fmt.Fprintf(w, "  PyTorch: your modules from %s, one sentence at a time\n", o.Oracle)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  step-isolated: every decoder step run on %s's own inputs for that step (the per-step verdict)\n", they)
	fmt.Fprintf(w, "  %-16s %5s  %-11s %-11s %5s  %s\n", "output", "steps", "max abs", "max rel", "worst", "verdict")
	for _, s := range o.Outputs {
		worst := "enc"
		if s.WorstStep >= 0 {
			worst = strconv.Itoa(s.WorstStep)
		}
		v := verdict(s.OK)
		switch {
		case reduced && !s.OK:
			v = fmt.Sprintf("outside the float32 tolerance in %d of %d steps", s.Failed, s.Steps)
		case reduced:
			v = "within the float32 tolerance"
		case !s.OK:
			v = fmt.Sprintf("MISMATCH in %d of %d: %s", s.Failed, s.Steps, s.Detail)
		}
		fmt.Fprintf(w, "  %-16s %5d  %-11.3e %-11.3e %5s  %s\n", s.Output, s.Steps, s.MaxAbs, s.MaxRel, worst, v)
	}
	if verbose {
		fmt.Fprintf(w, "\n  every step:\n")
		for _, r := range o.Rows {
			step := "enc"
			if r.Step >= 0 {
				step = strconv.Itoa(r.Step)
			}
			fmt.Fprintf(w, "  %5s %-16s %s\n", step, r.Output, r.Detail)
		}
	}
	if len(o.Drift) > 0 {
		fmt.Fprintf(w, "\n  free-running drift: the graphs fed their own states, as translate runs them (reported, not judged; largest |difference| per step)\n")
		var names []string
		for _, out := range o.Outputs { // the steps' outputs, in the table's order
			if _, ok := o.Drift[0].MaxAbs[out.Output]; ok {
				names = append(names, out.Output)
			}
		}
		fmt.Fprintf(w, "  %5s", "step")
		for _, n := range names {
			fmt.Fprintf(w, "  %-11s", n)
		}
		fmt.Fprintln(w)
		for _, d := range o.Drift {
			fmt.Fprintf(w, "  %5d", d.Step)
			for _, n := range names {
				fmt.Fprintf(w, "  %-11.3e", d.MaxAbs[n])
			}
			fmt.Fprintln(w)
		}
	}
	if verbose && len(o.DriftRows) > 0 {
		fmt.Fprintf(w, "\n  every free-running step:\n")
		for _, r := range o.DriftRows {
			fmt.Fprintf(w, "  %5d %-16s %s\n", r.Step, r.Output, r.Detail)
		}
	}
	fmt.Fprintln(w)
	same := func(b bool) string {
		if b {
			return "identical"
		}
		return "DIFFERENT"
	}
	if reduced {
		fmt.Fprintf(w, "  step argmax tokens (fed PyTorch's inputs, batch %d): %s\n", o.Batch, same(o.StepTokensIdentical))
		for _, a := range o.Agreement {
			writeAgreement(w, a)
		}
		if o.OK {
			fmt.Fprintf(w, "\nOK: the %s graphs decode as float32 PyTorch does for at least %.2f%% of the sentences\n", o.Weights, 100*o.MinAgreement)
		} else {
			fmt.Fprintf(w, "\nBELOW THRESHOLD: the %s graphs decode as float32 PyTorch does for fewer than %.2f%% of the sentences\n", o.Weights, 100*o.MinAgreement)
		}
		return
	}
	fmt.Fprintf(w, "  step argmax tokens (step-isolated and free-running): %s%s\n", same(o.StepTokensIdentical), nearTies(len(o.NearTies)))
	writeTies(w, o.NearTies)
	for _, g := range o.Greedy {
		fmt.Fprintf(w, "  greedy decoding, %s: %s%s", g.Graph, same(g.Identical), nearTies(len(g.NearTies)))
		if g.Detail != "" {
			fmt.Fprintf(w, " (%s)", g.Detail)
		}
		fmt.Fprintln(w)
		writeTies(w, g.NearTies)
	}
	for _, b := range o.Beam {
		fmt.Fprintf(w, "  beam search K=%d alpha=%g, %s: %s (%d hypotheses of %d rows, max score diff %.1e, %d near-tie swaps)",
			b.Beam, b.LengthPenalty, b.Engine, same(b.Identical), b.Hypotheses, b.Rows, b.MaxScoreDiff, b.Swaps)
		if b.Detail != "" {
			fmt.Fprintf(w, " (%s)", b.Detail)
		}
		fmt.Fprintln(w)
	}
	if o.OK {
		fmt.Fprintf(w, "\nOK: the ONNX graphs compute what %s %s\n", they, verb)
	} else {
		fmt.Fprintf(w, "\nMISMATCH: the ONNX graphs differ from %s\n", they)
	}
}

// nearTies says how many near ties a token comparison excused.
func nearTies(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " except 1 near tie"
	}
	return fmt.Sprintf(" except %d near ties", n)
}

// writeTies lists near ties, the first ten.
func writeTies(w io.Writer, ties []NearTie) {
	for i, n := range ties {
		if i == 10 {
			fmt.Fprintf(w, "    ... and %d more near ties\n", len(ties)-10)
			break
		}
		fmt.Fprintf(w, "    near tie: %s\n", n)
	}
}
