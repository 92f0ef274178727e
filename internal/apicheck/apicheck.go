// Package apicheck lists the exported names of the packages a module's
// users can import (every package but main ones and those under an
// internal directory) and says which lack a doc comment. Its test keeps
// attnx's surface documented; cmd surface counts it.
package apicheck

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Kinds of exported names.
const (
	KindType   = "type"
	KindFunc   = "func"   // a function, constructors included
	KindMethod = "method" // of an exported type, or of an exported interface
	KindConst  = "const"
	KindVar    = "var"
	KindField  = "field" // of an exported struct type
)

// Name is one exported name of a package.
type Name struct {
	// Kind is one of the Kind constants.
	Kind string
	// Name is the identifier, qualified by its type for methods and
	// fields ("Translator.Close", "Options.Beam").
	Name string
	// Pos is where it is declared (the first file when the name is
	// declared in several, under different build constraints).
	Pos token.Position
	// Documented is true when every declaration of it has a doc comment:
	// its own, its group's (a parenthesised const, var or type block), or
	// a comment at the end of its line.
	Documented bool
}

// Package is one importable package and its exported names, sorted by
// kind and name.
type Package struct {
	// Path is the import path, Dir the directory.
	Path, Dir string
	// Names are the exported names.
	Names []Name
}

// Undocumented returns the names without a doc comment, of the kinds
// given (every kind when none is).
func (p Package) Undocumented(kinds ...string) []Name {
	var out []Name
	for _, n := range p.Names {
		if !n.Documented && (len(kinds) == 0 || slices.Contains(kinds, n.Kind)) {
			out = append(out, n)
		}
	}
	return out
}

// Count returns how many names of the kinds given the package exports
// (every kind when none is).
func (p Package) Count(kinds ...string) int {
	n := 0
	for _, x := range p.Names {
		if len(kinds) == 0 || slices.Contains(kinds, x.Kind) {
			n++
		}
	}
	return n
}

// Scan reads the module whose go.mod is in root and returns its
// importable packages, sorted by import path. Every non-test .go file
// counts whatever its build constraints (a name declared for cgo and
// again without it is one name), except those marked //go:build ignore.
// Directories named testdata or internal, hidden ones and nested modules
// are skipped.
func Scan(root string) ([]Package, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	var pkgs []Package
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if name == "testdata" || name == "internal" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		imp := module
		if rel != "." {
			imp = module + "/" + filepath.ToSlash(rel)
		}
		p, ok, err := scanDir(path, imp)
		if err != nil {
			return err
		}
		if ok {
			pkgs = append(pkgs, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apicheck: %w", err)
	}
	return pkgs, nil
}

// modulePath reads the module line of a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("apicheck: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("apicheck: %s: %w", gomod, err)
	}
	return "", fmt.Errorf("apicheck: %s has no module line", gomod)
}

// scanDir reads one directory's package; ok is false for a directory
// without Go files (tests aside) or with a main package.
func scanDir(dir, imp string) (p Package, ok bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return p, false, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return p, false, err
		}
		if ignored(f) {
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 || files[0].Name.Name == "main" {
		return p, false, nil
	}
	names := map[string]*Name{}
	var order []string
	add := func(kind, name string, pos token.Pos, documented bool) {
		key := kind + " " + name
		if n, seen := names[key]; seen {
			n.Documented = n.Documented && documented
			return
		}
		names[key] = &Name{Kind: kind, Name: name, Pos: fset.Position(pos), Documented: documented}
		order = append(order, key)
	}
	for _, f := range files {
		collect(f, add)
	}
	p = Package{Path: imp, Dir: dir}
	for _, k := range order {
		p.Names = append(p.Names, *names[k])
	}
	kindOrder := []string{KindType, KindFunc, KindMethod, KindConst, KindVar, KindField}
	slices.SortFunc(p.Names, func(a, b Name) int {
		if c := slices.Index(kindOrder, a.Kind) - slices.Index(kindOrder, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return p, true, nil
}

// ignored reports whether a file is marked //go:build ignore (a program
// run by go run, not part of the package).
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				continue
			}
			uses := false
			expr.Eval(func(tag string) bool {
				uses = uses || tag == "ignore"
				return true
			})
			if uses {
				return true
			}
		}
	}
	return false
}

// collect calls add for every exported name a file declares.
func collect(f *ast.File, add func(kind, name string, pos token.Pos, documented bool)) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				add(KindFunc, d.Name.Name, d.Pos(), d.Doc != nil)
				continue
			}
			if recv := receiverType(d.Recv); recv != "" && ast.IsExported(recv) {
				add(KindMethod, recv+"."+d.Name.Name, d.Pos(), d.Doc != nil)
			}
		case *ast.GenDecl:
			groupDoc := d.Doc != nil
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					add(KindType, s.Name.Name, s.Pos(), groupDoc || s.Doc != nil || s.Comment != nil)
					members(s, add)
				case *ast.ValueSpec:
					kind := KindVar
					if d.Tok == token.CONST {
						kind = KindConst
					}
					for _, id := range s.Names {
						if id.IsExported() {
							add(kind, id.Name, id.Pos(), groupDoc || s.Doc != nil || s.Comment != nil)
						}
					}
				}
			}
		}
	}
}

// members adds the exported fields of a struct type and the methods of
// an interface type.
func members(s *ast.TypeSpec, add func(kind, name string, pos token.Pos, documented bool)) {
	var list *ast.FieldList
	kind := KindField
	switch t := s.Type.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, KindMethod
	default:
		return
	}
	for _, fld := range list.List {
		documented := fld.Doc != nil || fld.Comment != nil
		for _, id := range fld.Names {
			if id.IsExported() {
				add(kind, s.Name.Name+"."+id.Name, id.Pos(), documented)
			}
		}
	}
}

// receiverType is the name of a method's receiver type, without pointer
// or type parameters.
func receiverType(recv *ast.FieldList) string {
	if len(recv.List) == 0 {
		return ""
	}
	t := recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
