package translate

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
)

// TestDecodingOptionsDoc: docs/decoding.md is DecodingOptions' table as
// generated; every option names a field of Options and, where it has one,
// a key of attnx.json's defaults. (The CLI's flags and serve's request
// fields are checked against the table in their own packages.)
func TestDecodingOptionsDoc(t *testing.T) {
	const path = "../docs/decoding.md"
	want := DecodingOptionsMarkdown()
	if os.Getenv("ATTNX_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s is stale (%v): run ATTNX_UPDATE_DOCS=1 go test ./translate -run TestDecodingOptionsDoc", path, err)
	}
	opts := reflect.TypeFor[Options]()
	defaults := map[string]bool{}
	for f := range reflect.TypeFor[modeldir.Defaults]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		defaults[name] = true
	}
	for _, o := range DecodingOptions {
		if _, ok := opts.FieldByName(o.Go); !ok {
			t.Errorf("%s: no such field of Options", o.Go)
		}
		if o.Default != "" && !defaults[o.Default] {
			t.Errorf("%s: attnx.json's defaults have no %q", o.Go, o.Default)
		}
	}
}
