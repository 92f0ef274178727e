package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes a summary: the verdicts per folder, the expected
// failures counted by category, and each failed or unexpectedly passing
// case with its reason. With verbose, every expected failure and every
// note is listed too.
func (r *Report) WriteTable(w io.Writer, verbose bool) error {
	if r.Backend == "go" {
		return r.writeNative(w, verbose)
	}
	type counts struct{ total, passed, failed, xfail, xpass int }
	per := map[string]*counts{}
	var folders []string
	for _, c := range r.Cases {
		k := per[c.Folder]
		if k == nil {
			k = &counts{}
			per[c.Folder] = k
			folders = append(folders, c.Folder)
		}
		k.total++
		switch c.Status {
		case Passed:
			k.passed++
		case Failed:
			k.failed++
		case ExpectedFailure:
			k.xfail++
		case UnexpectedlyPassing:
			k.xpass++
		}
	}
	sort.Strings(folders)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "folder\tcases\tpassed\tfailed\texpected failures\tunexpectedly passing\t\n")
	for _, f := range folders {
		k := per[f]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", f, k.total, k.passed, k.failed, k.xfail, k.xpass)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t\n", r.Total, r.Passed, r.Failed, r.ExpectedFailures, r.UnexpectedlyPassing)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nround trip: %d of %d models re-serialize to an equal model; ONNX Runtime %s; %.1fs\n",
		r.RoundTripEqual, r.Total, r.ORTVersion, r.Seconds)
	fmt.Fprintf(w, "expected-failure list: %s, %d entries\n", r.ExpectedList.Source, r.ExpectedList.Entries)

	byCat := map[string]int{}
	for _, c := range r.Cases {
		if c.Status == ExpectedFailure {
			byCat[c.Expected.Category]++
		}
	}
	if len(byCat) > 0 {
		cats := make([]string, 0, len(byCat))
		for k := range byCat {
			cats = append(cats, k)
		}
		sort.Slice(cats, func(i, j int) bool {
			if byCat[cats[i]] != byCat[cats[j]] {
				return byCat[cats[i]] > byCat[cats[j]]
			}
			return cats[i] < cats[j]
		})
		fmt.Fprintf(w, "\nexpected failures by category:\n")
		for _, k := range cats {
			fmt.Fprintf(w, "  %4d  %s\n", byCat[k], k)
		}
	}
	if r.Failed+r.UnexpectedlyPassing > 0 || verbose {
		fmt.Fprintln(w)
	}
	for _, c := range r.Cases {
		switch {
		case c.Status == Failed:
			fmt.Fprintf(w, "FAILED %s at %s: %s\n", c.Name, c.Stage, c.Reason)
		case c.Status == UnexpectedlyPassing:
			fmt.Fprintf(w, "UNEXPECTEDLY PASSING %s: %s\n", c.Name, c.Reason)
		case verbose && c.Status == ExpectedFailure:
			fmt.Fprintf(w, "expected failure %s at %s (%s): %s\n", c.Name, c.Stage, c.Expected.Category, c.Reason)
		}
		if verbose && c.Note != "" {
			fmt.Fprintf(w, "note %s: %s\n", c.Name, c.Note)
		}
	}
	return nil
}

// writeNative writes a native backend report: the verdicts, then per
// operator the cases that use it, then each failed case (and, verbose,
// each unsupported and not-implemented one).
func (r *Report) writeNative(w io.Writer, verbose bool) error {
	fmt.Fprintf(w, "native backend: %d cases: %d passed, %d failed, %d expected failures (%s), %d unsupported (a variant the evaluator refuses), %d not implemented (an operator it lacks); %.1fs\n\n",
		r.Total, r.Passed, r.Failed, r.ExpectedFailures, r.ExpectedList.Source, r.Unsupported, r.NotImplemented, r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "operator\tcases\tpassed\tfailed\texpected failures\tunsupported\twith a missing op\t\n")
	for _, k := range r.Ops {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", k.Op, k.Cases, k.Passed, k.Failed, k.Expected, k.Unsupported, k.Missing)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Failed > 0 || verbose {
		fmt.Fprintln(w)
	}
	for _, c := range r.Cases {
		switch {
		case c.Status == Failed:
			fmt.Fprintf(w, "FAILED %s at %s: %s\n", c.Name, c.Stage, c.Reason)
		case verbose && (c.Status == Unsupported || c.Status == NotImplemented):
			fmt.Fprintf(w, "%s %s: %s\n", c.Status, c.Name, c.Reason)
		}
	}
	return nil
}
