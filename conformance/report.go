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

// WriteTable writes a summary: passed/failed/skipped per folder, the
// skipped and failed reasons grouped with counts, and each failed case.
// With verbose, every skipped case is listed too.
func (r *Report) WriteTable(w io.Writer, verbose bool) error {
	type counts struct{ total, passed, failed, skipped int }
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
		case Skipped:
			k.skipped++
		}
	}
	sort.Strings(folders)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "folder\tcases\tpassed\tfailed\tskipped\t\n")
	for _, f := range folders {
		k := per[f]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", f, k.total, k.passed, k.failed, k.skipped)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t\n", r.Total, r.Passed, r.Failed, r.Skipped)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nround trip: %d of %d models re-serialize to an equal model; %d cases also run from the original file; ONNX Runtime %s; %.1fs\n",
		r.RoundTripEqual, r.Total, r.OriginalRuns, r.ORTVersion, r.Seconds)
	for _, st := range []Status{Skipped, Failed} {
		groups := map[string][]string{}
		for _, c := range r.Cases {
			if c.Status == st {
				groups[c.Group] = append(groups[c.Group], c.Name)
			}
		}
		if len(groups) == 0 {
			continue
		}
		keys := make([]string, 0, len(groups))
		for g := range groups {
			keys = append(keys, g)
		}
		sort.Slice(keys, func(i, j int) bool {
			if len(groups[keys[i]]) != len(groups[keys[j]]) {
				return len(groups[keys[i]]) > len(groups[keys[j]])
			}
			return keys[i] < keys[j]
		})
		fmt.Fprintf(w, "\n%s by reason:\n", st)
		for _, g := range keys {
			fmt.Fprintf(w, "  %4d  %s\n", len(groups[g]), g)
		}
	}
	for _, c := range r.Cases {
		if c.Status == Failed || (verbose && c.Status == Skipped) {
			fmt.Fprintf(w, "%s %s: %s\n", c.Status, c.Name, c.Reason)
		}
	}
	return nil
}
