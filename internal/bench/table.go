package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as a table: one block per configuration,
// one line per engine, then the ratios, targets, notes and profile.
func WriteTable(w io.Writer, rep *Report) error {
	c := rep.Config
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warn)
	}
	blas := "not run"
	if c.TorchBLAS != nil {
		blas = c.TorchBLAS.Kind + " (" + c.TorchBLAS.describe() + ")"
	}
	fmt.Fprintf(w, "attnx bench: %s H=%d L=%d Vs=%d Vt=%d, %d steps, weights %s, ONNX Runtime %s, torch %s, PyTorch's BLAS %s\n",
		strings.Join(c.Archs, ","), c.Hidden, c.Layers, c.SrcVocab, c.TgtVocab, c.Steps, strings.Join(c.Weights, ","), c.ORT, c.Torch, blas)
	fmt.Fprintf(w, "EOS never emitted: %s\n", c.EOSMethod)
	fmt.Fprintf(w, "times: decode only (encoder apart), median, p90 and min over >= %d reps and >= %.1fs per engine, the ORT engines interleaved; a token is one row at one step (with beam search K > 1, all K hypotheses of the row); ms/sentence is one row's decode\n", c.MinReps, c.MinTimeS)
	fmt.Fprintf(w, "weights: the precision of the attnx engines' model (the others are fp32); vs fp32: the same engine's fp32 ms/token over this one's, at the same K; vs greedy: beam search's ms/sentence over the same engine's greedy decoding at the same weights; model MB: the graph files the engine loads\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arch\tS\tB\tT\tengine\tweights\tK\tms/token\tp90\tmin\tms/sentence\ttokens/s\tencoder ms\tRSS MB\tmodel MB\tvs fp32\tvs pytorch\tvs floor\tvs greedy\tsame tokens\t")
	last := ""
	for _, r := range rep.Results {
		key := configKey(r.Arch, r.SrcLen, r.Batch, r.Threads)
		if last != "" && key != last {
			fmt.Fprintln(tw, strings.Repeat("\t", 20))
		}
		last = key
		k := max(r.Beam, 1)
		if r.NA != "" {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\tn/a%s\n", r.Arch, r.SrcLen, r.Batch, r.Threads, r.Name, r.Weights, k, strings.Repeat("\t", 13))
			continue
		}
		same := ""
		if r.TokensMatchPyTorch != nil {
			same = fmt.Sprint(*r.TokensMatchPyTorch)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%.4f\t%.4f\t%.4f\t%.3f\t%.0f\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Arch, r.SrcLen, r.Batch, r.Threads, r.Name, r.Weights, k,
			r.MsPerTokenMedian, r.MsPerTokenP90, r.MsPerTokenMin, r.MsPerSentenceMedian, r.TokensPerS, orDash(r.EncoderMsMedian, "%.3f"), r.PeakRSSMB,
			orDash(float64(r.ModelBytes)/1e6, "%.1f"), orDash(r.SpeedupVsFP32, "%.2fx"), orDash(r.SpeedupVsPyTorch, "%.1fx"), orDash(r.RatioToFloor, "%.2f"), orDash(r.VsGreedy, "%.2fx"), same)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	na := map[string]bool{}
	for _, r := range rep.Results {
		if r.NA != "" && !na[r.Name+r.NA] {
			na[r.Name+r.NA] = true
			fmt.Fprintf(w, "\nn/a %s: %s", r.Name, r.NA)
		}
	}
	if len(rep.Targets) > 0 {
		fmt.Fprintf(w, "\n\ntargets (batch 1, 1 thread):\n")
		for _, t := range rep.Targets {
			mark := "MET    "
			if !t.Met {
				mark = "NOT MET"
			}
			fmt.Fprintf(w, "  %s %-22s %-45s want %-18s got %.2f (%s)\n", mark, t.Config, t.Name, t.Want, t.Got, t.Detail)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warn)
	}
	if p := rep.Profile; p != nil {
		fmt.Fprintf(w, "\nCPU profile of %s at %s: %.1fs, %d steps; Go argmax alone %.4f ms/step; read with: go tool pprof -top %s\n",
			EngineLean, p.Config, p.Seconds, p.Steps, p.GoArgmaxMsPerStep, p.Path)
		fmt.Fprintf(w, "ORT fixed costs: one Binding.Run of an Identity graph %.4f ms (per step of a step loop); one Loop iteration with an Identity body %.4f ms (per step in-graph)\n",
			p.ORTRunOverheadMs, p.ORTLoopIterationMs)
	}
	if p := rep.ProfileGo; p != nil {
		fmt.Fprintf(w, "CPU profile of %s at %s: %.1fs, %d steps; read with: go tool pprof -top %s\n",
			EngineLeanGo, p.Config, p.Seconds, p.Steps, p.Path)
	}
	return nil
}

func orDash(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}
