package ops

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoUnusedParameters fails when a function of the package (test files
// aside) has a named parameter that its body never mentions: a parameter
// that is accepted and then ignored, such as the output name unary once
// took, reads as if it did something. Parameters that must be there for a
// signature are named _.
func TestNoUnusedParameters(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			used := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					used[id.Name] = true
				}
				return true
			})
			for _, field := range fn.Type.Params.List {
				for _, p := range field.Names {
					if p.Name != "_" && !used[p.Name] {
						t.Errorf("%s: %s ignores its parameter %s", fset.Position(p.Pos()), fn.Name.Name, p.Name)
					}
				}
			}
		}
	}
}
