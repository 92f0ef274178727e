package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the command may be: the
// command maps flags to library calls (issue 54), and logic long enough
// to need more belongs in a package a Go program can import.
const maxFuncLines = 100

// overLength are the functions still longer than maxFuncLines, each with
// the length it may not exceed: files other work of issue 54 is changing
// (serve.go, export.go). An entry goes when its function is cut below
// maxFuncLines; the test says so.
var overLength = map[string]int{
	"serveConfig": 150,
	"runExport":   129,
}

// TestFunctionLength fails for each function of a non-test file of
// package main longer than maxFuncLines lines, from func to its closing
// brace (or than its overLength ceiling), and for an overLength entry
// whose function is short enough now.
func TestFunctionLength(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			funcs++
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			limit, listed := overLength[fd.Name.Name]
			switch {
			case listed && n <= maxFuncLines:
				t.Errorf("%s: %s is %d lines now: drop it from overLength", fset.Position(fd.Pos()), fd.Name.Name, n)
			case listed && n > limit:
				t.Errorf("%s: %s is %d lines, more than its %d: it should shrink below %d, not grow", fset.Position(fd.Pos()), fd.Name.Name, n, limit, maxFuncLines)
			case !listed && n > maxFuncLines:
				t.Errorf("%s: %s is %d lines, more than %d: move its logic into a library package", fset.Position(fd.Pos()), fd.Name.Name, n, maxFuncLines)
			}
		}
	}
	if funcs < 50 {
		t.Fatalf("found %d functions in %d files: not the command's directory?", funcs, len(files))
	}
}
