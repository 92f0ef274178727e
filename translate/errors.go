package translate

import (
	"errors"
	"fmt"

	"github.com/attnx/attnx/decode"
)

// ErrQueueFull is wrapped by the error of a Scheduler call that finds the
// scheduler's queue full (SchedulerConfig.MaxQueue calls waiting): the
// server is saturated, and the call may be retried later. It is
// decode.ErrQueueFull, so errors.Is matches either name.
var ErrQueueFull = decode.ErrQueueFull

// ErrClosed is returned by calls on a closed Translator or Scheduler. The
// error of a call on a closed Scheduler also matches
// decode.ErrSchedulerClosed with errors.Is.
var ErrClosed = errors.New("translate: translator is closed")

// RequestError is the refusal of what the caller asked for, found before
// anything runs: an option (Field) or an input (Row) at fault. A server
// answers it as a bad request (HTTP 400) and any other error as its own
// failure. Every refusal of an option or an input by this package
// matches it with errors.As: the errors of Open's and CheckCall's
// checks, *InputError and *BadInputError (an input), *RulesError and
// *CopySearchError (a setting the rules or the model do not take) and
// *LoopGraphError (Engine "loop" without its graph). errors.As finds the
// more specific type as well.
type RequestError struct {
	// Field is the Options field at fault ("CallOptions.F" for a field of
	// CallOptions), "" when an input is.
	Field string
	// Row is the input at fault, counted from 0 among the call's inputs,
	// or -1 when an option is.
	Row int
	// Err is the refusal itself; its message names the field or row and
	// says what is wanted.
	Err error
}

// Error returns Err's message.
func (e *RequestError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *RequestError) Unwrap() error { return e.Err }

// optionErrorf refuses the option field with a message formatted as
// fmt.Errorf formats it (%w wraps).
func optionErrorf(field, format string, args ...any) error {
	return &RequestError{Field: field, Row: -1, Err: fmt.Errorf(format, args...)}
}

// optionError refuses the option field with err.
func optionError(field string, err error) error {
	return &RequestError{Field: field, Row: -1, Err: err}
}

// asRequest sets target, when it is a **RequestError, to a RequestError
// for err: the As method of the package's specific refusals.
func asRequest(target any, err error, field string, row int) bool {
	p, ok := target.(**RequestError)
	if ok {
		*p = &RequestError{Field: field, Row: row, Err: err}
	}
	return ok
}

// As makes errors.As find an *InputError as a *RequestError of its Row.
func (e *InputError) As(target any) bool { return asRequest(target, e, "", e.Row) }

// As makes errors.As find a *BadInputError as a *RequestError of its Row.
func (e *BadInputError) As(target any) bool { return asRequest(target, e, "", e.Row) }

// As makes errors.As find a *RulesError as a *RequestError of its
// Options field.
func (e *RulesError) As(target any) bool { return asRequest(target, e, e.Option.Go, -1) }

// As makes errors.As find a *CopySearchError as a *RequestError of the
// Rules field (with Beam or Sampling, which the message names).
func (e *CopySearchError) As(target any) bool { return asRequest(target, e, "Rules", -1) }

// As makes errors.As find a *LoopGraphError as a *RequestError of the
// Engine field.
func (e *LoopGraphError) As(target any) bool { return asRequest(target, e, "Engine", -1) }

// schedulerClosed is the error of a call on a closed Scheduler: ErrClosed
// and decode.ErrSchedulerClosed both.
type schedulerClosed struct{}

func (schedulerClosed) Error() string { return "translate: scheduler is closed" }

func (schedulerClosed) Is(target error) bool {
	return target == ErrClosed || target == decode.ErrSchedulerClosed
}

// notFound is a missing file's error: its message is the package's own,
// and it wraps the os error, so that errors.Is(err, fs.ErrNotExist) holds.
type notFound struct {
	msg string
	err error
}

func (e *notFound) Error() string { return e.msg }

func (e *notFound) Unwrap() error { return e.err }
