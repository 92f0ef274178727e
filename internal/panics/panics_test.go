package panics

import (
	"errors"
	"strings"
	"testing"
)

func TestCall(t *testing.T) {
	want := errors.New("plain")
	if err := Call(func() error { return want }, "x"); err != want {
		t.Errorf("a returned error: %v", err)
	}
	err := Call(func() error {
		var s []int
		_ = s[3]
		return nil
	}, "reading %s", "f.model")
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "internal error while reading f.model: runtime error: index out of range [3]") {
		t.Fatalf("a panic: %v", err)
	}
	if f := pe.Frame(); !strings.Contains(f, "panics.TestCall") || !strings.Contains(f, "panics_test.go:") {
		t.Errorf("frame %q, want this test's function and file", f)
	}
}
