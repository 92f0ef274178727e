// Command fixturediff compares committed PyTorch fixtures with freshly
// regenerated ones, for `make testdata-check`:
//
//	go run ./internal/fixturediff COMMITTED REGENERATED
//
// What PyTorch computes exactly must be identical: every file byte for byte
// (checkpoints, inputs), the manifest's structure and values, and in each
// fixture's expected outputs file the tensor names, types, shapes and
// integer tensors (tokens, lengths). What depends on the BLAS PyTorch loads
// (OpenBLAS or the reference BLAS give different last bits) is compared
// within the spec's float32 tolerance, |a - b| <= 1e-5 + 1.3e-6 |b|: the
// float tensors of the expected outputs, the float statistics under a
// fixture's "checks" (within one unit of their last printed digit more),
// and the expected file's sha256 in the manifest, which is instead checked
// to be that of the file beside it, in each tree.
//
// It prints what differs and exits 1 when the fixtures are stale, 2 when it
// cannot compare them.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/compare"
)

// tol is the spec's PyTorch-vs-ONNX Runtime float32 tolerance, used here
// between two PyTorch runs on different BLAS libraries.
var tol = compare.Options{RTol: 1.3e-6, ATol: 1e-5, EqualNaN: true}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fixturediff COMMITTED REGENERATED")
		os.Exit(2)
	}
	r, err := compareTrees(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "fixturediff: %v\n", err)
		os.Exit(2)
	}
	if len(r.diffs) > 0 {
		for _, d := range r.diffs {
			fmt.Println(d)
		}
		fmt.Printf("%s is stale: run 'make testdata' and commit\n", os.Args[1])
		os.Exit(1)
	}
	fmt.Printf("%s is up to date", os.Args[1])
	if r.inexact > 0 {
		fmt.Printf(" (%d float outputs differ in their last bits, max abs %.3g: within rtol %g, atol %g)", r.inexact, r.maxAbs, tol.RTol, tol.ATol)
	}
	fmt.Println()
}

// report is the outcome of a comparison.
type report struct {
	diffs   []string // what differs beyond what is allowed
	inexact int      // float tensors that differ within tolerance
	maxAbs  float64  // their largest absolute difference
}

func (r *report) add(format string, a ...any) { r.diffs = append(r.diffs, fmt.Sprintf(format, a...)) }

// compareTrees compares the fixture directories a (committed) and b
// (regenerated).
func compareTrees(a, b string) (*report, error) {
	r := &report{}
	fa, err := listFiles(a)
	if err != nil {
		return nil, err
	}
	fb, err := listFiles(b)
	if err != nil {
		return nil, err
	}
	for _, f := range fa {
		if !contains(fb, f) {
			r.add("%s: only in %s", f, a)
		}
	}
	for _, f := range fb {
		if !contains(fa, f) {
			r.add("%s: only in %s", f, b)
		}
	}
	ma, err := readManifest(filepath.Join(a, "manifest.json"))
	if err != nil {
		return nil, err
	}
	mb, err := readManifest(filepath.Join(b, "manifest.json"))
	if err != nil {
		return nil, err
	}
	outputs := outputFiles(ma)
	compareJSON(r, "manifest.json", nil, ma, mb, outputs)
	for _, tree := range []struct {
		dir string
		m   any
	}{{a, ma}, {b, mb}} {
		checkOutputHashes(r, tree.dir, tree.m, outputs)
	}
	for _, f := range fa {
		if f == "manifest.json" || !contains(fb, f) {
			continue
		}
		pa, pb := filepath.Join(a, f), filepath.Join(b, f)
		if outputs[f] {
			if err := compareOutputs(r, f, pa, pb); err != nil {
				return nil, err
			}
			continue
		}
		da, err := os.ReadFile(pa)
		if err != nil {
			return nil, err
		}
		db, err := os.ReadFile(pb)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(da, db) {
			r.add("%s: differs (compared byte for byte)", f)
		}
	}
	return r, nil
}

// listFiles returns the regular files under dir, relative and sorted.
func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	sort.Strings(out)
	return out, err
}

func contains(xs []string, x string) bool {
	i := sort.SearchStrings(xs, x)
	return i < len(xs) && xs[i] == x
}

func readManifest(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// fixtureEntries returns the manifest's fixtures list.
func fixtureEntries(m any) []map[string]any {
	top, _ := m.(map[string]any)
	list, _ := top["fixtures"].([]any)
	var out []map[string]any
	for _, e := range list {
		if f, ok := e.(map[string]any); ok {
			out = append(out, f)
		}
	}
	return out
}

// outputFiles returns the expected-output files the manifest lists
// (fixtures[i].files.expected), relative to the fixtures directory.
func outputFiles(m any) map[string]bool {
	out := map[string]bool{}
	for _, f := range fixtureEntries(m) {
		dir, _ := f["dir"].(string)
		files, _ := f["files"].(map[string]any)
		exp, _ := files["expected"].(map[string]any)
		if p, ok := exp["path"].(string); ok && dir != "" {
			out[dir+"/"+p] = true
		}
	}
	return out
}

// compareJSON compares manifest values exactly, except where a float
// statistic or an output file's hash may differ (see the package comment).
func compareJSON(r *report, where string, path []string, a, b any, outputs map[string]bool) {
	at := where + ": " + strings.Join(path, ".")
	switch va := a.(type) {
	case map[string]any:
		vb, ok := b.(map[string]any)
		if !ok {
			r.add("%s: %s, want %s", at, describe(b), describe(a))
			return
		}
		keys := map[string]bool{}
		for k := range va {
			keys[k] = true
		}
		for k := range vb {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			xa, ina := va[k]
			xb, inb := vb[k]
			switch {
			case !ina:
				r.add("%s.%s: only in the regenerated manifest", at, k)
			case !inb:
				r.add("%s.%s: only in the committed manifest", at, k)
			case k == "sha256" && isOutputEntry(path, va, outputs):
				// checked against the file in each tree instead
			default:
				compareJSON(r, where, append(path, k), xa, xb, outputs)
			}
		}
	case []any:
		vb, ok := b.([]any)
		if !ok || len(vb) != len(va) {
			r.add("%s: %s, want %s", at, describe(b), describe(a))
			return
		}
		for i := range va {
			compareJSON(r, where, append(path, strconv.Itoa(i)), va[i], vb[i], outputs)
		}
	case json.Number:
		vb, ok := b.(json.Number)
		if !ok {
			r.add("%s: %s, want %s", at, describe(b), describe(a))
			return
		}
		if va == vb {
			return
		}
		if isCheck(path) && isFloat(va) && isFloat(vb) {
			fa, _ := va.Float64()
			fb, _ := vb.Float64()
			if math.Abs(fb-fa) <= tol.ATol+tol.RTol*math.Abs(fa)+lastDigit(va) {
				return
			}
		}
		r.add("%s: %s, want %s", at, vb, va)
	default:
		if !reflect.DeepEqual(a, b) {
			r.add("%s: %s, want %s", at, describe(b), describe(a))
		}
	}
}

// isOutputEntry reports whether the object at path, holding entry, is the
// manifest's record of an expected-output file (fixtures.N.files.K).
func isOutputEntry(path []string, entry map[string]any, outputs map[string]bool) bool {
	if len(path) != 4 || path[0] != "fixtures" || path[2] != "files" {
		return false
	}
	p, _ := entry["path"].(string)
	for f := range outputs {
		if strings.HasSuffix(f, "/"+p) {
			return true
		}
	}
	return false
}

// isCheck reports whether path is a statistic under fixtures.N.checks.
func isCheck(path []string) bool {
	return len(path) == 4 && path[0] == "fixtures" && path[2] == "checks"
}

func isFloat(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }

// lastDigit returns one unit of the last decimal digit n was printed with
// (0.0926 -> 0.0001): a value rounded for the manifest may round the other
// way after a change in its last bits.
func lastDigit(n json.Number) float64 {
	s := strings.ToLower(string(n))
	exp := 0
	if i := strings.IndexByte(s, 'e'); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:])
		s = s[:i]
	}
	decimals := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		decimals = len(s) - i - 1
	}
	return math.Pow(10, float64(exp-decimals))
}

func describe(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return fmt.Sprintf("a list of %d", len(v))
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", v)
}

// checkOutputHashes checks that the manifest in dir records the sha256 and
// size of each expected-output file beside it.
func checkOutputHashes(r *report, dir string, m any, outputs map[string]bool) {
	for _, f := range fixtureEntries(m) {
		fdir, _ := f["dir"].(string)
		files, _ := f["files"].(map[string]any)
		exp, _ := files["expected"].(map[string]any)
		p, _ := exp["path"].(string)
		if !outputs[fdir+"/"+p] {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, fdir, p))
		if err != nil {
			continue // reported as a missing file
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); exp["sha256"] != got {
			r.add("%s/manifest.json: %s/%s has sha256 %v in the manifest but %s on disk", dir, fdir, p, exp["sha256"], got)
		}
		if n, _ := exp["bytes"].(json.Number); n.String() != strconv.Itoa(len(data)) {
			r.add("%s/manifest.json: %s/%s has %v bytes in the manifest but %d on disk", dir, fdir, p, exp["bytes"], len(data))
		}
	}
}

// compareOutputs compares two expected-output safetensors files: same
// tensors, types, shapes and metadata; integer tensors equal; float
// tensors within tolerance.
func compareOutputs(r *report, name, pa, pb string) error {
	sa, err := checkpoint.LoadSafetensors(pa)
	if err != nil {
		return err
	}
	sb, err := checkpoint.LoadSafetensors(pb)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(sa.Keys, sb.Keys) {
		r.add("%s: tensors %v, want %v", name, sb.Keys, sa.Keys)
		return nil
	}
	if !reflect.DeepEqual(sa.Metadata, sb.Metadata) {
		r.add("%s: metadata %v, want %v", name, sb.Metadata, sa.Metadata)
	}
	for _, k := range sa.Keys {
		ta, tb := sa.Tensors[k], sb.Tensors[k]
		if ta.DType != tb.DType || !reflect.DeepEqual(ta.Dims, tb.Dims) {
			r.add("%s: %s is %v%v, want %v%v", name, k, tb.DType, tb.Dims, ta.DType, ta.Dims)
			continue
		}
		if bytes.Equal(ta.Raw, tb.Raw) {
			continue
		}
		if !ta.DType.IsFloat() {
			r.add("%s: %s differs (%v, compared exactly)", name, k, ta.DType)
			continue
		}
		res, err := compareFloats(tb, ta)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, k, err)
		}
		if !res.OK {
			r.add("%s: %s differs beyond tolerance: %v", name, k, res)
			continue
		}
		r.inexact++
		r.maxAbs = math.Max(r.maxAbs, res.MaxAbsErr)
	}
	return nil
}

// compareFloats compares got with want, both floating point (converted to
// float32: the fixtures' outputs are float32).
func compareFloats(got, want *builder.Tensor) (compare.Result, error) {
	g, err := got.ToFloat32()
	if err != nil {
		return compare.Result{}, err
	}
	w, err := want.ToFloat32()
	if err != nil {
		return compare.Result{}, err
	}
	return compare.Float32(g, w, want.Dims, tol), nil
}
