package onnxfile

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// protobufImports are the import paths only package onnxfile (and the
// generated bindings themselves) may use.
var protobufImports = []string{"google.golang.org/protobuf", "github.com/attnx/attnx/internal/onnxpb"}

// mayImportProtobuf lists the module directories allowed to import them:
// onnxfile for ONNX files, and subword for SentencePiece's .model files,
// which are protobuf messages too (read in subword/spm_model.go only).
var mayImportProtobuf = map[string]bool{"onnxfile": true, "internal/onnxpb": true, "subword": true}

// TestProtobufStaysInOnnxfile parses the imports of every Go file of the
// module, test files included, and fails for each one outside onnxfile/ and
// internal/onnxpb/ that imports protobuf or the generated bindings: the rest
// of attnx works on builder's types and on what export returns (GraphIO,
// GraphNodes, ReadSequenceProto...), so that there is one place that knows
// the wire format.
func TestProtobufStaysInOnnxfile(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// What the go command ignores: testdata, hidden and _ folders.
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if mayImportProtobuf[filepath.ToSlash(filepath.Dir(rel))] {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			for _, banned := range protobufImports {
				if p == banned || strings.HasPrefix(p, banned+"/") {
					t.Errorf("%s imports %s: only onnxfile/ and internal/onnxpb/ may; use package onnxfile's API", rel, p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("checked %d Go files outside onnxfile/ and internal/onnxpb/, want the whole module", files)
	}
}
