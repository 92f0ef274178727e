package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/attnx/attnx/builder"
)

// Average reads the checkpoints at paths, several saved states of one
// model of one toolkit, and averages their weights with the arithmetic of
// that toolkit's own script, so that the result holds the very values the
// script writes:
//
//   - OpenNMT-py (tools/average_models.py, 2.x and 3.x alike): a running
//     mean in the tensors' own type, avg = (avg*i + p_i) / (i+1) for the
//     i-th file from 0, each operation rounded to float32 (float64 for a
//     float64 tensor). The update is in place, so tensors that share
//     their storage in a file (tied weights, such as share_embeddings'
//     embeddings) are updated once for each of their names, as the
//     script does.
//   - fairseq (scripts/average_checkpoints.py): the sum of the files'
//     tensors in the order given, then one division by N; float16 tensors
//     are summed as float32 and stay float32, integer tensors are summed
//     in their type (wrapping as PyTorch's do) and floor-divided.
//
// The other entries (OpenNMT-py's opt and vocab, fairseq's cfg and the
// rest) are the first file's, as both scripts keep them. The files must be
// of one toolkit and hold the same tensors (for fairseq, whose script
// compares the lists, in the same order), with the same shapes and types
// (and for OpenNMT-py the same vocab); an error names the file and the
// key, shape or vocabulary entry that differs. The files are read one at
// a time: the first, the sums and the file being added are in memory.
// Tensors the script itself cannot average (integers and float16 for
// OpenNMT-py, whose in-place division fails or stays in float16; bool and
// bfloat16 for fairseq) are refused, naming the tensor.
func Average(paths []string) (*StateDict, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("average: no checkpoints given")
	}
	first, err := Load(paths[0])
	if err != nil {
		return nil, err
	}
	if err := averageable(first, paths[0]); err != nil {
		return nil, err
	}
	// The files are read one at a time: only the first (whose tensors
	// become the average's), the sums and the file being added are held.
	fs := files{n: len(paths), get: func(i int) (*StateDict, error) {
		if i == 0 {
			return first, nil
		}
		sd, err := Load(paths[i])
		if err != nil {
			return nil, err
		}
		if err := averageable(sd, paths[i]); err != nil {
			return nil, err
		}
		if err := sameModel(first, sd, paths[0], paths[i]); err != nil {
			return nil, err
		}
		return sd, nil
	}}
	out := &StateDict{Keys: append([]string(nil), first.Keys...), Tensors: make(map[string]*builder.Tensor, len(first.Keys)),
		Format: first.Format, Origin: first.Origin, Notes: append([]string(nil), first.Notes...)}
	switch first.Origin.Toolkit {
	case ToolkitOpenNMT:
		err = averageOpenNMT(fs, out)
		// average_models.py writes optim None.
		if _, ok := out.Origin.Entries["optim"]; ok {
			out.Origin = &Origin{Toolkit: first.Origin.Toolkit, Entries: copyEntries(first.Origin.Entries)}
			out.Origin.Entries["optim"] = nil
		}
		out.Notes = append(out.Notes, fmt.Sprintf("averaged %d checkpoints as OpenNMT-py's average_models.py does (a running mean, avg = (avg*i + p)/(i+1), in float32), with the first's opt and vocab: %s", len(paths), baseNames(paths)))
	case ToolkitFairseq:
		err = averageFairseq(fs, out)
		out.Notes = append(out.Notes, fmt.Sprintf("averaged %d checkpoints as fairseq's average_checkpoints.py does (their sum in the order given, divided by %d), with the first's cfg: %s", len(paths), len(paths), baseNames(paths)))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// averageable says whether sd is a toolkit checkpoint whose script
// averages it.
func averageable(sd *StateDict, path string) error {
	if sd.Origin == nil || (sd.Origin.Toolkit != ToolkitOpenNMT && sd.Origin.Toolkit != ToolkitFairseq) {
		what := "not a toolkit's training checkpoint"
		if sd.Origin != nil {
			what = "a " + toolkitNames[sd.Origin.Toolkit] + " checkpoint"
		}
		return fmt.Errorf("%s: %s; averaging follows OpenNMT-py's tools/average_models.py or fairseq's scripts/average_checkpoints.py, so it takes those toolkits' checkpoints only", path, what)
	}
	if len(sd.Keys) == 0 {
		return fmt.Errorf("%s: no tensors to average (an OpenNMT-py checkpoint saved with -save_format safetensors keeps them in a .safetensors file beside it)", path)
	}
	return nil
}

// sameModel checks that b holds the same model as a: the same toolkit,
// tensors, shapes, types and (OpenNMT-py) vocabulary.
func sameModel(a, b *StateDict, pa, pb string) error {
	if a.Origin.Toolkit != b.Origin.Toolkit {
		return fmt.Errorf("%s is a %s checkpoint but %s is %s's: averaged checkpoints must be of one model", pb, toolkitNames[b.Origin.Toolkit], pa, toolkitNames[a.Origin.Toolkit])
	}
	inB := make(map[string]bool, len(b.Keys))
	for _, k := range b.Keys {
		inB[k] = true
	}
	for _, k := range a.Keys {
		if !inB[k] {
			return fmt.Errorf("%s has no tensor %q, which %s has: averaged checkpoints must be of one model", pb, k, pa)
		}
	}
	if len(b.Keys) != len(a.Keys) {
		inA := make(map[string]bool, len(a.Keys))
		for _, k := range a.Keys {
			inA[k] = true
		}
		for _, k := range b.Keys {
			if !inA[k] {
				return fmt.Errorf("%s has a tensor %q, which %s has not: averaged checkpoints must be of one model", pb, k, pa)
			}
		}
	}
	for i, k := range a.Keys {
		ta, tb := a.Tensors[k], b.Tensors[k]
		if !slices.Equal(ta.Dims, tb.Dims) {
			return fmt.Errorf("tensor %q is %v in %s but %v in %s: averaged checkpoints must be of one model", k, ta.Dims, pa, tb.Dims, pb)
		}
		if ta.DType != tb.DType {
			return fmt.Errorf("tensor %q is %s in %s but %s in %s", k, ta.DType, pa, tb.DType, pb)
		}
		// fairseq's script compares the lists of keys, order included.
		if a.Origin.Toolkit == ToolkitFairseq && b.Keys[i] != k {
			return fmt.Errorf("%s lists its tensors in another order than %s (%q where %s has %q): fairseq's average_checkpoints.py refuses that", pb, pa, b.Keys[i], pa, k)
		}
	}
	if a.Origin.Toolkit == ToolkitOpenNMT {
		if where, va, vb, ok := firstDifference(a.Origin.Entries["vocab"], b.Origin.Entries["vocab"], "vocab"); !ok {
			return fmt.Errorf("the vocabularies differ: %s is %s in %s but %s in %s; averaged checkpoints must share their vocabulary", where, va, pa, vb, pb)
		}
	}
	return nil
}

// averageOpenNMT is average_models.py's running mean, in place on the
// first file's tensors: one buffer for each group of names sharing a
// storage view, updated once per name.
func averageOpenNMT(fs files, out *StateDict) error {
	first, err := fs.get(0)
	if err != nil {
		return err
	}
	for _, k := range first.Keys {
		if dt := first.Tensors[k].DType; dt != builder.Float && dt != builder.Double {
			return fmt.Errorf("tensor %q is %s: attnx averages OpenNMT-py's float32 and float64 tensors only (average_models.py fails on integers and keeps float16 in float16 without -fp32)", k, dt)
		}
	}
	// Names sharing a view in the first file share its buffer.
	group := map[string]string{} // key -> the first key of its view
	byView := map[View]string{}
	for _, k := range first.Keys {
		group[k] = k
		if v, ok := first.Views[k]; ok {
			if g, seen := byView[v]; seen {
				group[k] = g
			} else {
				byView[v] = k
			}
		}
	}
	if err := checkOverlaps(first); err != nil {
		return err
	}
	buf := map[string][]float64{} // each group's values
	isDouble := map[string]bool{}
	for _, k := range first.Keys {
		if group[k] == k {
			buf[k] = values(first.Tensors[k])
			isDouble[k] = first.Tensors[k].DType == builder.Double
		}
	}
	for i := 1; i < fs.n; i++ {
		sd, err := fs.get(i)
		if err != nil {
			return err
		}
		fi, next := float64(i), float64(i+1)
		for _, k := range first.Keys {
			x, p := buf[group[k]], values(sd.Tensors[k])
			if isDouble[group[k]] {
				for j := range x {
					x[j] = (x[j]*fi + p[j]) / next
				}
				continue
			}
			a, b := float32(fi), float32(next)
			for j := range x {
				// Each conversion rounds, as each of torch's in-place
				// operations does (no fused multiply-add).
				t := float32(float32(x[j]) * a)
				t = float32(t + float32(p[j]))
				x[j] = float64(float32(t / b))
			}
		}
	}
	for _, k := range first.Keys {
		out.Tensors[k] = fromValues(k, first.Tensors[k], buf[group[k]], first.Tensors[k].DType)
	}
	return nil
}

// checkOverlaps refuses tensors whose elements overlap in a storage
// without being the same view: their in-place updates would interleave in
// ways the script's loop order alone decides.
func checkOverlaps(sd *StateDict) error {
	type span struct {
		key        string
		start, end int
		view       View
	}
	spans := map[string][]span{}
	for _, k := range sd.Keys {
		v, ok := sd.Views[k]
		if !ok {
			continue
		}
		n := int(sd.Tensors[k].NumElements())
		spans[v.Storage] = append(spans[v.Storage], span{k, v.Offset, v.Offset + n, v})
	}
	for _, ss := range spans {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			p, c := ss[i-1], ss[i]
			if c.start < p.end && c.view != p.view {
				return fmt.Errorf("tensors %q and %q overlap in one storage without being the same tensor; averaging such a checkpoint is not supported", p.key, c.key)
			}
		}
	}
	return nil
}

// files gives the checkpoints being averaged, the i-th from 0 of n.
type files struct {
	n   int
	get func(i int) (*StateDict, error)
}

// averageFairseq is average_checkpoints.py: each tensor cloned from the
// first file, the others added in order, then divided by N (floats) or
// floor-divided (integers).
func averageFairseq(fs files, out *StateDict) error {
	first, err := fs.get(0)
	if err != nil {
		return err
	}
	f32 := map[string][]float32{} // float32 and float16 (added as float32)
	f64 := map[string][]float64{}
	ints := map[string][]int64{}
	for _, k := range first.Keys {
		t := first.Tensors[k]
		switch t.DType {
		case builder.Float, builder.Float16:
			p := values(t)
			x := make([]float32, len(p))
			for j := range x {
				x[j] = float32(p[j])
			}
			f32[k] = x
		case builder.Double:
			f64[k] = values(t)
		case builder.Int8, builder.Int16, builder.Int32, builder.Int64, builder.Uint8:
			ints[k] = intValues(t)
		default:
			return fmt.Errorf("tensor %q is %s: attnx averages fairseq's float32, float16, float64 and integer tensors", k, t.DType)
		}
	}
	for i := 1; i < fs.n; i++ {
		sd, err := fs.get(i)
		if err != nil {
			return err
		}
		for _, k := range first.Keys {
			t := sd.Tensors[k]
			switch {
			case f32[k] != nil:
				x, p := f32[k], values(t)
				for j := range x {
					x[j] = float32(x[j] + float32(p[j]))
				}
			case f64[k] != nil:
				x, p := f64[k], values(t)
				for j := range x {
					x[j] += p[j]
				}
			case ints[k] != nil:
				x, p := ints[k], intValues(t)
				for j := range x {
					x[j] = wrap(x[j]+p[j], t.DType)
				}
			}
		}
	}
	n := fs.n
	for _, k := range first.Keys {
		t := first.Tensors[k]
		switch {
		case f32[k] != nil:
			x, d := f32[k], float32(n)
			v := make([]float64, len(x))
			for j := range x {
				v[j] = float64(float32(x[j] / d))
			}
			out.Tensors[k] = fromValues(k, t, v, builder.Float)
		case f64[k] != nil:
			x := f64[k]
			for j := range x {
				x[j] /= float64(n)
			}
			out.Tensors[k] = fromValues(k, t, x, builder.Double)
		case ints[k] != nil:
			x := ints[k]
			for j := range x {
				x[j] = floorDiv(x[j], int64(n))
			}
			out.Tensors[k] = fromInts(k, t, x)
		}
	}
	return nil
}

// values returns a float tensor's elements as float64 (exactly).
func values(t *builder.Tensor) []float64 {
	n := int(t.NumElements())
	out := make([]float64, n)
	r := t.Raw
	for i := range out {
		switch t.DType {
		case builder.Float:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(r[4*i:])))
		case builder.Double:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(r[8*i:]))
		case builder.Float16:
			out[i] = float64(builder.HalfToFloat32(binary.LittleEndian.Uint16(r[2*i:])))
		}
	}
	return out
}

// fromValues makes the tensor key of type dt, shaped as like, holding v
// (float32 values for builder.Float).
func fromValues(key string, like *builder.Tensor, v []float64, dt builder.DataType) *builder.Tensor {
	t := &builder.Tensor{Name: key, DType: dt, Dims: append([]int64(nil), like.Dims...)}
	if dt == builder.Double {
		t.Raw = make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(t.Raw[8*i:], math.Float64bits(x))
		}
		return t
	}
	t.Raw = make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(t.Raw[4*i:], math.Float32bits(float32(x)))
	}
	return t
}

// intValues returns an integer tensor's elements as int64.
func intValues(t *builder.Tensor) []int64 {
	n := int(t.NumElements())
	out := make([]int64, n)
	r := t.Raw
	for i := range out {
		switch t.DType {
		case builder.Int8:
			out[i] = int64(int8(r[i]))
		case builder.Uint8:
			out[i] = int64(r[i])
		case builder.Int16:
			out[i] = int64(int16(binary.LittleEndian.Uint16(r[2*i:])))
		case builder.Int32:
			out[i] = int64(int32(binary.LittleEndian.Uint32(r[4*i:])))
		case builder.Int64:
			out[i] = int64(binary.LittleEndian.Uint64(r[8*i:]))
		}
	}
	return out
}

// wrap reduces x to the range of dt, as PyTorch's integer addition wraps.
func wrap(x int64, dt builder.DataType) int64 {
	switch dt {
	case builder.Int8:
		return int64(int8(x))
	case builder.Uint8:
		return int64(uint8(x))
	case builder.Int16:
		return int64(int16(x))
	case builder.Int32:
		return int64(int32(x))
	}
	return x
}

// floorDiv is Python's and torch.floor_divide's a // b for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func fromInts(key string, like *builder.Tensor, v []int64) *builder.Tensor {
	t := &builder.Tensor{Name: key, DType: like.DType, Dims: append([]int64(nil), like.Dims...)}
	size := like.DType.Size()
	t.Raw = make([]byte, size*len(v))
	for i, x := range v {
		switch size {
		case 1:
			t.Raw[i] = byte(x)
		case 2:
			binary.LittleEndian.PutUint16(t.Raw[2*i:], uint16(x))
		case 4:
			binary.LittleEndian.PutUint32(t.Raw[4*i:], uint32(x))
		case 8:
			binary.LittleEndian.PutUint64(t.Raw[8*i:], uint64(x))
		}
	}
	return t
}

// firstDifference compares two plain values and, when they differ, says
// where (a path from name) and what each holds there; ok is true when
// they are equal.
func firstDifference(a, b any, name string) (where, va, vb string, ok bool) {
	if reflect.DeepEqual(a, b) {
		return "", "", "", true
	}
	short := func(v any) string {
		s := fmt.Sprintf("%q", v)
		if _, isStr := v.(string); !isStr {
			s = fmt.Sprintf("%v", v)
		}
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		return s
	}
	switch x := a.(type) {
	case map[string]any:
		if y, isMap := b.(map[string]any); isMap {
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			for k := range y {
				if _, in := x[k]; !in {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				xv, inX := x[k]
				yv, inY := y[k]
				if !inX || !inY {
					return fmt.Sprintf("%s[%q]", name, k), presence(inX), presence(inY), false
				}
				if w, p, q, same := firstDifference(xv, yv, fmt.Sprintf("%s[%q]", name, k)); !same {
					return w, p, q, false
				}
			}
		}
	case []any:
		if y, isList := b.([]any); isList {
			for i := 0; i < len(x) && i < len(y); i++ {
				if w, p, q, same := firstDifference(x[i], y[i], fmt.Sprintf("%s[%d]", name, i)); !same {
					return w, p, q, false
				}
			}
			if len(x) != len(y) {
				return "the length of " + name, fmt.Sprint(len(x)), fmt.Sprint(len(y)), false
			}
		}
	case *Object:
		if y, isObj := b.(*Object); isObj && x.Class == y.Class {
			if w, p, q, same := firstDifference(x.Attrs, y.Attrs, name); !same {
				return w, p, q, false
			}
			return firstDifference(x.State, y.State, name)
		}
	}
	return name, short(a), short(b), false
}

func presence(in bool) string {
	if in {
		return "present"
	}
	return "missing"
}

func copyEntries(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func baseNames(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return strings.Join(names, ", ")
}
