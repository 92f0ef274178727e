package apicheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The kinds whose every exported name must have a doc comment. Struct
// fields are counted (cmd surface) but not yet required.
var required = []string{KindType, KindFunc, KindMethod, KindConst, KindVar}

// TestExportedNamesDocumented fails naming each exported type, function,
// method (of an exported type, or of an exported interface), constant
// and variable of attnx's importable packages that has no doc comment.
func TestExportedNamesDocumented(t *testing.T) {
	pkgs, err := Scan(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 || !slices.ContainsFunc(pkgs, func(p Package) bool { return p.Path == "github.com/attnx/attnx/translate" }) {
		t.Fatalf("Scan found %d packages, without translate: not the attnx module", len(pkgs))
	}
	for _, p := range pkgs {
		if strings.Contains(p.Path, "/internal/") {
			t.Errorf("%s is internal, yet listed", p.Path)
		}
		for _, n := range p.Undocumented(required...) {
			t.Errorf("%s: %s %s %s has no doc comment", n.Pos, p.Path, n.Kind, n.Name)
		}
	}
}

// TestScan: on a module written for the test, every exported name of
// each kind is listed with whether it is documented, its own comment, its
// group's or one at the end of its line counting; a name declared for cgo
// and without it is documented only when both are; internal, main,
// testdata, ignored and test files are left out.
func TestScan(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26.0\n")
	write("lib/a.go", `// Package lib is documented.
package lib

// Doc is documented.
type Doc struct {
	// Field is documented.
	Field int
	Bare  int
	Trail int // documented at the end of its line
	hidden int
}

type Bare interface {
	// Method is documented.
	Method()
	Naked()
}

// Generic is documented.
type Generic[T any] struct{}

// M is documented.
func (Generic[T]) M() {}

func (*Generic[T]) N() {}

func (Doc) Undone() {}

// Done is documented.
func (d *Doc) Done() {}

func (unexported) Exported() {}

type unexported struct{}

func Func() {}

// New is documented.
func New() *Doc { return nil }

// Grouped constants share their group's comment.
const (
	One = 1
	Two = 2
)

const (
	Three = 3 // at the end of its line
	Four  = 4
	five  = 5
)

var Var, Other int

// Err is documented.
var Err error
`)
	write("lib/cgo.go", "//go:build cgo\n\npackage lib\n\n// Init is documented here.\nfunc Init() {}\n")
	write("lib/nocgo.go", "//go:build !cgo\n\npackage lib\n\nfunc Init() {}\n")
	write("lib/gen.go", "//go:build ignore\n\npackage main\n\nfunc Generated() {}\n")
	write("lib/a_test.go", "package lib\n\nfunc TestOnly() {}\n")
	write("lib/internal/x/x.go", "package x\n\nfunc Hidden() {}\n")
	write("internal/y/y.go", "package y\n\nfunc Hidden() {}\n")
	write("cmd/tool/main.go", "package main\n\nfunc Exported() {}\n")
	write("lib/testdata/z.go", "package z\n\nfunc Data() {}\n")
	write("other/go.mod", "module example.com/other\n")
	write("other/o.go", "package other\n\nfunc Elsewhere() {}\n")
	write("empty/doc_test.go", "package empty\n")
	write("docs/doc.go", "// Package docs holds no names.\npackage docs\n")

	pkgs, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pkgs {
		got = append(got, "package "+p.Path)
		for _, n := range p.Names {
			got = append(got, fmt.Sprintf("%s %s %v", n.Kind, n.Name, n.Documented))
		}
	}
	want := []string{
		"package example.com/m/docs",
		"package example.com/m/lib",
		"type Bare false", "type Doc true", "type Generic true",
		"func Func false", "func Init false", "func New true",
		"method Bare.Method true", "method Bare.Naked false", "method Doc.Done true", "method Doc.Undone false", "method Generic.M true", "method Generic.N false",
		"const Four false", "const One true", "const Three true", "const Two true",
		"var Err true", "var Other false", "var Var false",
		"field Doc.Bare false", "field Doc.Field true", "field Doc.Trail true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Scan listed\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	lib := pkgs[1]
	if n, u := lib.Count(required...), len(lib.Undocumented(required...)); n != 19 || u != 9 {
		t.Errorf("lib: %d names, %d undocumented; want 19 and 9", n, u)
	}
	if n, u := lib.Count(KindField), len(lib.Undocumented(KindField)); n != 3 || u != 1 {
		t.Errorf("lib: %d fields, %d undocumented; want 3 and 1", n, u)
	}
	if _, err := Scan(filepath.Join(root, "lib")); err == nil || !strings.Contains(err.Error(), "go.mod") {
		t.Errorf("Scan of a directory without go.mod: %v, want an error naming go.mod", err)
	}
}
