// Package panics turns a panic in code that handles user-supplied data (a
// model being loaded, a request, a batch of a test set) into an error
// naming what was being done, so that a bug meets one input with a clear
// error instead of taking the process down: a panic in a goroutine other
// than main's is beyond main's recover and would end the process.
package panics

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Error is a recovered panic.
type Error struct {
	// What names the work that panicked ("loading model \"m\" (dir)").
	What string
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, for logs.
	Stack []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("internal error while %s: %v (this is a bug in attnx; please report it)", e.What, e.Value)
}

// Frame returns the first stack frame inside attnx's own code below the
// panic, "package.Function file:line", for a log line; "" when there is
// none.
func (e *Error) Frame() string {
	lines := strings.Split(string(e.Stack), "\n")
	for i := 0; i+1 < len(lines); i++ {
		fn := lines[i]
		if strings.HasPrefix(fn, "github.com/attnx/attnx/") && !ownFrame(fn) {
			return strings.TrimPrefix(fn, "github.com/attnx/attnx/") + " " + strings.TrimSpace(lines[i+1])
		}
	}
	return ""
}

// ownFrame reports whether a stack line is one of this package's
// functions, which stand between the panic and the code that panicked.
func ownFrame(fn string) bool {
	for _, f := range []string{"New(", "Recover(", "Call("} {
		if strings.HasPrefix(fn, "github.com/attnx/attnx/internal/panics."+f) {
			return true
		}
	}
	return false
}

// Recover, deferred with a pointer to the function's error result, turns a
// panic into an *Error naming what:
//
//	func load(dir string) (err error) {
//		defer panics.Recover(&err, "loading %s", dir)
//		...
//	}
//
// recover works only in the deferred function itself: a deferred closure
// that needs more calls recover() and then New.
func Recover(err *error, format string, args ...any) {
	if p := recover(); p != nil {
		*err = New(p, format, args...)
	}
}

// New makes the *Error of a recovered value p, with the current stack.
func New(p any, format string, args ...any) *Error {
	return &Error{What: fmt.Sprintf(format, args...), Value: p, Stack: debug.Stack()}
}

// Call runs f, returning its error, or an *Error naming what if it
// panics.
func Call(f func() error, format string, args ...any) (err error) {
	defer Recover(&err, format, args...)
	return f()
}
