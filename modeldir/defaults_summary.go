package modeldir

import (
	"fmt"
	"strings"
)

// Summary says for a reader how the model decodes by default: "beam 5
// with OpenNMT-py's beam search, length penalty avg (alpha 1), max length
// ...", as attnx inspect prints it.
func (d *Defaults) Summary() string {
	var parts []string
	switch {
	case d.Beam > 1 && d.Rules == "opennmt":
		parts = append(parts, fmt.Sprintf("beam %d with OpenNMT-py's beam search", d.Beam))
	case d.Beam > 1 && d.Rules == "joeynmt":
		parts = append(parts, fmt.Sprintf("beam %d with JoeyNMT's beam search", d.Beam))
	case d.Rules == "fairseq":
		parts = append(parts, fmt.Sprintf("beam %d with fairseq's SequenceGenerator", max(d.Beam, 1)))
	case d.Beam > 1:
		parts = append(parts, fmt.Sprintf("beam %d", d.Beam))
	default:
		parts = append(parts, "greedy")
	}
	if d.NBest > 1 {
		parts = append(parts, fmt.Sprintf("n-best %d", d.NBest))
	}
	if d.LengthPenalty != nil && d.Beam > 1 {
		form := d.LengthPenaltyForm
		if form == "" {
			form = "power"
		}
		parts = append(parts, fmt.Sprintf("length penalty %s (alpha %g)", form, *d.LengthPenalty))
	}
	if d.MinLen > 0 {
		parts = append(parts, fmt.Sprintf("min length %d", d.MinLen))
	}
	n, of := "the source", ""
	if b := d.Batching; b != nil {
		unit, who := "sentences", "OpenNMT-py's, sorted by length"
		if b.Tokens {
			unit = "source tokens"
		}
		if b.Style == BatchingJoeyNMT {
			who = "JoeyNMT's, in file order"
		}
		n, of = "n", fmt.Sprintf(", n the longest source of its batch (%s, of %d %s)", who, b.Size, unit)
	}
	limit := fmt.Sprintf("%g x %s", d.MaxLenFactor, n)
	if d.MaxLenAdd > 0 {
		limit += fmt.Sprintf(" + %g", d.MaxLenAdd)
	}
	switch {
	case d.MaxLenFactor > 0 && d.MaxLen > 0:
		parts = append(parts, fmt.Sprintf("max length min(%d, %s)%s", d.MaxLen, limit, of))
	case d.MaxLenFactor > 0:
		parts = append(parts, "max length "+limit+of)
	case d.MaxLen > 0:
		parts = append(parts, fmt.Sprintf("max length %d", d.MaxLen))
	case d.Rules == "opennmt":
		parts = append(parts, "max length min(250, 1.25 x the source + 5)")
	}
	if d.ReplaceUnk {
		parts = append(parts, "replace-unk")
	}
	if d.BanUNK {
		parts = append(parts, "ban-unk")
	}
	return strings.Join(parts, ", ")
}
