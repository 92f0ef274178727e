package conformance

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
)

// OpCount is the native backend's verdicts on the cases that use one
// operator (a case counts for every operator its graph uses).
type OpCount struct {
	Op          string `json:"op"`
	Cases       int    `json:"cases"`
	Passed      int    `json:"passed"`
	Failed      int    `json:"failed"`
	Unsupported int    `json:"unsupported"`
	// Expected counts the cases on the backend-independent part of the
	// expected-failure list (test data that contradicts its model, values
	// the Go API cannot feed).
	Expected int `json:"expected_failures"`
	// Missing counts the cases of this operator that also use one the
	// evaluator does not implement (not run).
	Missing int `json:"missing"`
}

// caseOps returns the operators of a case's model (subgraphs included),
// as onnxeval names them ("Op", or "domain.Op" outside the default
// domain), and those the evaluator lacks.
func caseOps(c Case) (ops, missing []string) {
	mp, err := onnxfile.Load(filepath.Join(c.Dir, "model.onnx"))
	if err != nil {
		return nil, nil
	}
	g, err := onnxfile.ReadGraph(mp)
	if err != nil {
		return nil, nil
	}
	seen := map[string]bool{}
	var walk func(g *onnxfile.Graph)
	walk = func(g *onnxfile.Graph) {
		for _, n := range g.Nodes {
			name := n.Op
			if n.Domain != "" && n.Domain != "ai.onnx" {
				name = n.Domain + "." + n.Op
			}
			if !seen[name] {
				seen[name] = true
				ops = append(ops, name)
				if !onnxeval.Implements(n.Domain, n.Op) {
					missing = append(missing, name)
				}
			}
			for _, sub := range n.Graphs {
				walk(sub)
			}
		}
	}
	walk(g)
	sort.Strings(ops)
	sort.Strings(missing)
	return ops, missing
}

// independentCategories are the expected-failure categories that hold
// whatever runs the model: test data that contradicts the model, values
// the Go API cannot feed, outputs that are random.
var independentCategories = map[string]bool{"data-does-not-fit": true, "binding-optional": true, "binding-empty-sequence": true, "random-output": true}

// backendIndependent keeps the entries of x in independentCategories: the
// rest record ONNX Runtime's own failures.
func backendIndependent(x *Expectations) *Expectations {
	out := &Expectations{Source: x.Source + ", backend-independent entries (" + strings.Join(sortedKeys(independentCategories), ", ") + ")", Header: x.Header, Entries: map[string]Expectation{}}
	for k, e := range x.Entries {
		if independentCategories[e.Category] {
			out.Entries[k] = e
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// judgeNative turns a native run's verdict into NotImplemented or
// Unsupported where the evaluator said so.
func judgeNative(r *CaseResult, c Case) {
	r.Ops, r.MissingOps = caseOps(c)
	switch {
	case len(r.MissingOps) > 0:
		r.Status = NotImplemented
		r.Reason = "operators not implemented by the native evaluator: " + strings.Join(r.MissingOps, ", ")
	case r.Status == Failed && r.Stage == StageLoad && strings.Contains(r.Reason, "native evaluator: node"):
		r.Status = Unsupported
	case r.Status == Failed && (r.Stage == StageRun || r.Stage == StageLoad) &&
		(strings.Contains(r.Reason, "not supported by the native backend") || strings.Contains(r.Reason, "the native backend needs every input and output")):
		r.Status = Unsupported // element types (float16, strings) or sequences it does not hold
	case r.Status == Failed && r.Stage == StageRun && strings.Contains(r.Reason, "is not supported"):
		r.Status = Unsupported
	}
}

// opCounts tallies the native verdicts per operator, sorted by name.
func opCounts(results []CaseResult) []OpCount {
	per := map[string]*OpCount{}
	for _, r := range results {
		for _, op := range r.Ops {
			if !onnxeval.Implements(domainOf(op)) {
				continue
			}
			k := per[op]
			if k == nil {
				k = &OpCount{Op: op}
				per[op] = k
			}
			k.Cases++
			switch r.Status {
			case Passed:
				k.Passed++
			case Failed:
				k.Failed++
			case Unsupported:
				k.Unsupported++
			case ExpectedFailure:
				k.Expected++
			case NotImplemented:
				k.Missing++
			}
		}
	}
	out := make([]OpCount, 0, len(per))
	for _, k := range per {
		out = append(out, *k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	return out
}

// domainOf splits "domain.Op" (or "Op") for onnxeval.Implements.
func domainOf(op string) (domain, name string) {
	if i := strings.LastIndex(op, "."); i >= 0 {
		return op[:i], op[i+1:]
	}
	return "", op
}
