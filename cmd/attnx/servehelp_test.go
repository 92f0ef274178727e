package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/serve"
)

// TestServeHelpNamesEveryField: attnx serve's help names every JSON field
// of the request, the decoding ones from serve.DecodingFields (read from
// the type, so the list cannot fall behind it); it named six of them.
func TestServeHelpNamesEveryField(t *testing.T) {
	code, help, stderr := attnx("help", "serve")
	if code != 0 {
		t.Fatalf("help serve: exit %d, %s", code, stderr)
	}
	for f := range reflect.TypeFor[serve.Request]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !strings.Contains(help, `"`+name+`"`) {
			t.Errorf("attnx serve's help does not name the request field %q", name)
		}
	}
	for line := range strings.SplitSeq(help, "\n") {
		if len(line) > 80 {
			t.Errorf("help line of %d columns: %q", len(line), line)
		}
	}
}
