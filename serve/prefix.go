package serve

import (
	"fmt"
	"strings"
)

// prefixJob sets job's prefixes from req's "prefix" (one target text per
// input, tokenised by the model's target side), or returns what is wrong
// with it.
func prefixJob(req *Request, m *servedModel, job *Job) string {
	if req.Prefix == nil {
		return ""
	}
	switch {
	case req.Inputs == nil:
		return `prefix: give it with "inputs" (texts), one per input`
	case len(req.Prefix) != len(req.Inputs):
		return fmt.Sprintf("prefix: %d prefixes for %d inputs: want one per input (\"\" for none)", len(req.Prefix), len(req.Inputs))
	}
	enc, ok := m.backend.(interface {
		EncodePrefixes([]string) ([][]int64, error)
	})
	if !ok {
		return fmt.Sprintf("prefix: model %q cannot force target prefixes", m.name)
	}
	ids, err := enc.EncodePrefixes(req.Prefix)
	if err != nil {
		return "prefix: " + strings.TrimPrefix(err.Error(), "translate: ")
	}
	job.Toolkit.Prefixes = ids
	return ""
}
