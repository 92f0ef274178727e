package translate

import (
	"cmp"
	"fmt"

	"github.com/attnx/attnx/modeldir"
)

// Limits are one row's output limits: what its search is given, whichever
// engine runs it, and what a server budgets for.
type Limits struct {
	// Max is the most tokens the row may produce, EOS included: Want cut
	// to CallOptions.MaxLenCap. Min is the fewest before EOS may come
	// (MinLen, or the model's rules'; 0: none).
	Max, Min int
	// SrcLen is the n Want follows: the row's source length, or, for a
	// call AsTestSet, the longest source of the toolkit batch it is in.
	SrcLen int
	// Want is the limit the settings give before MaxLenCap.
	Want int
	// By names the setting that gives Want as Options and CallOptions
	// name it ("MaxLen", "MaxLenA", "MaxLenRatio"), or is "" when none
	// does: the model's own limit (attnx.json's defaults), OpenNMT-py's
	// default under its rules, or DefaultMaxLen.
	By string
}

// OutputLimits returns the output limits each row of sources (token ids,
// as TranslateIDs takes them) gets in a call with opt, from every setting
// that bears on them: MaxLen, MaxLenA (fairseq's a x n + b, within its
// 1,024 positions), MaxLenRatio (OpenNMT-py's min(max_len, R x n + 5)),
// the model's own limit, the rules' defaults, AsTestSet's batches and
// MaxLenCap. The searches of TranslateIDsCall, the Scheduler and
// TranslateIDs (for opt's zero value) get these limits, which is what a
// server must estimate its memory from. The error is CheckCall's for bad
// settings, or an *InputError naming the first row whose Min is at or
// above its Max under fairseq's rules (fairseq asserts min_len <=
// max_len: the row would end empty), which the call would return before
// decoding anything.
func (t *Translator) OutputLimits(sources [][]int64, opt CallOptions) ([]Limits, error) {
	so, err := t.callSearchOptions(opt)
	if err != nil {
		return nil, err
	}
	so.lens = t.testSetLens(sources, opt)
	return t.rowLimits(sources, so)
}

// rowLimits returns the limits of each of rows under so, or an
// *InputError for the first whose Min leaves it no room (checkLimits).
func (t *Translator) rowLimits(rows [][]int64, so searchOpts) ([]Limits, error) {
	if err := t.checkPrefixes(len(rows), so); err != nil {
		return nil, err
	}
	out := make([]Limits, len(rows))
	for r, row := range rows {
		out[r] = t.rowLimitsOf(so, r, row)
		if err := so.checkLimits(r, out[r]); err != nil {
			return nil, err
		}
		if err := t.checkPrefix(r, so, out[r]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkLimits refuses row r's limits l under fairseq's rules when min_len
// reaches the limit: fairseq asserts min_len <= max_len, and its search
// would end the row empty.
func (so searchOpts) checkLimits(r int, l Limits) error {
	if !so.fairseq || l.Min == 0 || l.Min < l.Max {
		return nil
	}
	return &InputError{Row: r, Position: -1, Msg: fmt.Sprintf("min_len %d is at or above this input's output limit of %d tokens, EOS included (fairseq asserts min_len <= max_len): lower min_len or raise max_len", l.Min, l.Max)}
}

// rowLimitsOf is the limits of row r (source row) for its n: its own
// length, or so.lens'; under OpenNMT-py's rules a row's target prefix
// raises them (prefixLimits).
func (t *Translator) rowLimitsOf(so searchOpts, r int, row []int64) Limits {
	n := len(row)
	if so.lens != nil && so.lens[r] > 0 {
		n = so.lens[r]
	}
	return so.prefixLimits(r, t.limitsFor(n, so))
}

// limit is Limit.
func (t *Translator) limit(n int) int { return t.limitsFor(n, t.searchOptions()).Max }

// limitsFor is the limits for n source tokens under so.
func (t *Translator) limitsFor(n int, so searchOpts) Limits {
	l := Limits{SrcLen: n}
	l.Want, l.By = t.wantLimit(n, so)
	l.Max = l.Want
	if so.maxLenCap > 0 {
		l.Max = min(l.Max, so.maxLenCap)
	}
	if so.rules != nil {
		l.Min = so.rules.EOSFromStep
	}
	return l
}

// wantLimit is the output limit for n source tokens before the cap, and
// the setting that gives it (Limits.By): Options.MaxLenRatio's (or the
// call's) when set, else MaxLenA's, else MaxLen (the call's, else
// Options'), else the model's own (attnx.json's defaults), else
// onmt_translate's under OpenNMT-py's rules, else DefaultMaxLen.
func (t *Translator) wantLimit(n int, so searchOpts) (int, string) {
	maxLen := cmp.Or(so.maxLen, t.opt.MaxLen) // the call's, else Options'
	by := ""
	if maxLen > 0 {
		by = "MaxLen"
	}
	if r := so.maxLenRatio; r != nil {
		// onmt_translate's limit with this -max_length_ratio, and
		// -max_length MaxLen or its default.
		onmt := modeldir.OpenNMTTranslate()
		l := (&modeldir.Defaults{MaxLen: cmp.Or(maxLen, onmt.MaxLen), MaxLenFactor: *r, MaxLenAdd: onmt.MaxLenAdd}).Limit(n)
		if *r > 0 && (maxLen == 0 || l < maxLen) {
			by = "MaxLenRatio" // its term, or the -max_length it brings
		}
		return l, by
	}
	if a := so.maxLenA; a > 0 {
		// fairseq's min(int(a x src_len + b), max_len - 1), then </s>.
		b := cmp.Or(maxLen, fairseqMaxLen) - 1
		return min(int(a*float64(n)+float64(b)), fairseqPositions-1) + 1, "MaxLenA"
	}
	if maxLen > 0 {
		return maxLen, by
	}
	if l := t.info.OutputLimit(n); l > 0 {
		return l, ""
	}
	if so.openNMT {
		return openNMTMaxLen(n), ""
	}
	return DefaultMaxLen(n), ""
}
