package serve

import (
	"cmp"
	"fmt"

	"github.com/attnx/attnx/translate"
)

// LimitsBackend is a Backend that says what output limits its searches
// give a job's rows (translate.Translator.OutputLimits, from every
// setting: max_len, max_len_a, max_len_ratio, the model's own limit, the
// rules', the toolkit's batches, the cap): the server estimates a
// request's memory from them and holds them to --max-out-len. Both of
// this package's backends are; for another Backend the server takes
// max_len, else 2n+10, within the cap.
type LimitsBackend interface {
	Backend
	// OutputLimits returns the limits of job's rows, in order; a row
	// whose limits cannot hold (fairseq's min_len at or above its limit)
	// is a *translate.InputError naming it.
	OutputLimits(job Job) ([]translate.Limits, error)
}

// outputLimits returns the output limits of job's rows on m, or the
// error that refuses the request: the backend's (an InputError naming a
// row), or a limitError for a row whose limit a field of the request
// raises past --max-out-len, as a max_len past it is refused.
func (s *Server) outputLimits(m *servedModel, job Job) ([]translate.Limits, error) {
	lb, ok := m.backend.(LimitsBackend)
	if !ok {
		return assumedLimits(job, s.cfg.MaxOutLen), nil
	}
	limits, err := lb.OutputLimits(job)
	if err != nil {
		return nil, err
	}
	for i, l := range limits {
		if l.Want > s.cfg.MaxOutLen && l.By != "" {
			return nil, &limitError{row: i, field: translate.OptionNames(l.By, func(o translate.DecodingOption) string { return o.Field }), limit: l.Want, cap: s.cfg.MaxOutLen}
		}
	}
	return limits, nil
}

// limitError is a request whose field gives a row an output limit past
// the server's --max-out-len.
type limitError struct {
	row        int    // the row, from 0
	field      string // the request's field that gives the limit
	limit, cap int    // the limit, and --max-out-len
}

func (e *limitError) Error() string { return e.describe("inputs") }

// describe words the error with the request's rows named inputs (texts)
// or ids.
func (e *limitError) describe(inputs string) string {
	return fmt.Sprintf("%s[%d]: %s gives this input an output limit of %d tokens, EOS included: more than the server's --max-out-len %d; lower %s",
		inputs, e.row, e.field, e.limit, e.cap, e.field)
}

// assumedLimits are the output limits the server assumes for the rows of
// a Backend that does not say (not a LimitsBackend): max_len, else 2n+10,
// within maxOut.
func assumedLimits(job Job, maxOut int) []translate.Limits {
	limits := make([]translate.Limits, len(job.IDs))
	for i, row := range job.IDs {
		want := cmp.Or(job.MaxLen, translate.DefaultMaxLen(len(row)))
		limits[i] = translate.Limits{Max: min(want, maxOut), Want: want, SrcLen: len(row), Min: job.MinLen}
	}
	return limits
}
