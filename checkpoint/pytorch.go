package checkpoint

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"sort"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// maxPickleSize bounds data.pkl; a state dict's pickle is a few hundred
// bytes per tensor.
const maxPickleSize = 256 << 20

// ReadPyTorch reads a torch.save checkpoint (zip format) of size bytes from
// r. The pickle's top-level object must be a dict of tensors, or a dict with
// a "state_dict" or "model" entry holding one (recorded in Notes). Tensors
// are returned contiguous, whatever their strides and storage offsets;
// tensors sharing a storage get independent copies. Errors do not name the
// file; Load and LoadPyTorch add it.
func ReadPyTorch(r io.ReaderAt, size int64) (sd *StateDict, err error) {
	defer func() {
		if p := recover(); p != nil {
			sd, err = nil, fmt.Errorf("pytorch: malformed checkpoint: the pickle decoder failed: %v", p)
		}
	}()
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("pytorch: corrupt or truncated zip archive: %w", err)
	}
	a := &archive{size: size, files: make(map[string]*zip.File, len(zr.File)), storages: map[string][]byte{}}
	var pkls []string
	for _, f := range zr.File {
		if _, dup := a.files[f.Name]; dup {
			return nil, fmt.Errorf("pytorch: zip archive has two entries named %q", f.Name)
		}
		a.files[f.Name] = f
		if f.Name == "data.pkl" || (strings.HasSuffix(f.Name, "/data.pkl") && strings.Count(f.Name, "/") == 1) {
			pkls = append(pkls, f.Name)
		}
	}
	switch len(pkls) {
	case 0:
		return nil, fmt.Errorf("pytorch: zip archive has no data.pkl: not a torch.save checkpoint")
	case 1:
	default:
		return nil, fmt.Errorf("pytorch: zip archive has %d data.pkl entries (%s), want one", len(pkls), strings.Join(pkls, ", "))
	}
	a.prefix = strings.TrimSuffix(pkls[0], "data.pkl")
	if _, ok := a.files[a.prefix+"constants.pkl"]; ok {
		return nil, errors.New("pytorch: this is a TorchScript archive (torch.jit.save), not a state dict; save model.state_dict() with torch.save instead")
	}
	if f, ok := a.files[a.prefix+"byteorder"]; ok {
		b, err := a.readEntry(f, 16)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(b)); s != "little" {
			return nil, fmt.Errorf("pytorch: byte order %q is not supported (want little)", s)
		}
	}
	pkl, err := a.readEntry(a.files[pkls[0]], maxPickleSize)
	if err != nil {
		return nil, err
	}
	if err := scanPickle(pkl); err != nil {
		return nil, fmt.Errorf("pytorch: %s: %w", pkls[0], err)
	}
	obj, err := a.unpickle(pkl)
	if err != nil {
		return nil, fmt.Errorf("pytorch: %s: %w", pkls[0], err)
	}
	entries, notes, err := selectStateDict(obj)
	if err != nil {
		return nil, fmt.Errorf("pytorch: %w", err)
	}
	sd = &StateDict{Tensors: make(map[string]*builder.Tensor, len(entries)), Format: FormatPyTorch, Notes: notes}
	budget := 16*size + 64<<20 // tensors may share storage, but not without bound
	for _, e := range entries {
		t, note, err := a.materialise(e.key, e.t, &budget)
		if err != nil {
			return nil, fmt.Errorf("pytorch: tensor %q: %w", e.key, err)
		}
		if note != "" {
			sd.Notes = append(sd.Notes, note)
		}
		sd.Keys = append(sd.Keys, e.key)
		sd.Tensors[e.key] = t
	}
	return sd, nil
}

type archive struct {
	size     int64
	prefix   string
	files    map[string]*zip.File
	storages map[string][]byte
	refs     map[string]*storageRef
}

// readEntry reads a whole zip entry after checking its declared size
// against limit and the archive, and verifies its checksum.
func (a *archive) readEntry(f *zip.File, limit uint64) ([]byte, error) {
	n := f.UncompressedSize64
	if n > limit {
		return nil, fmt.Errorf("pytorch: zip entry %s is %d bytes, more than the %d expected", f.Name, n, limit)
	}
	switch f.Method {
	case zip.Store:
		if f.CompressedSize64 != n {
			return nil, fmt.Errorf("pytorch: corrupt zip entry %s: stored size %d differs from size %d", f.Name, f.CompressedSize64, n)
		}
	case zip.Deflate:
		// deflate cannot expand more than about 1032 times
		if n/1032 > f.CompressedSize64+1 {
			return nil, fmt.Errorf("pytorch: corrupt zip entry %s: %d bytes cannot inflate to %d", f.Name, f.CompressedSize64, n)
		}
	default:
		return nil, fmt.Errorf("pytorch: zip entry %s uses unsupported compression method %d", f.Name, f.Method)
	}
	if f.CompressedSize64 > uint64(a.size) {
		return nil, fmt.Errorf("pytorch: corrupt zip entry %s: %d bytes claimed in a %d-byte file (truncated?)", f.Name, f.CompressedSize64, a.size)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("pytorch: corrupt zip entry %s: %w", f.Name, err)
	}
	defer rc.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, fmt.Errorf("pytorch: corrupt or truncated zip entry %s: %w", f.Name, err)
	}
	var one [1]byte
	if k, err := rc.Read(one[:]); k != 0 || err != io.EOF { // io.EOF checks the CRC
		if err == nil || err == io.EOF {
			err = errors.New("more data than declared")
		}
		return nil, fmt.Errorf("pytorch: corrupt zip entry %s: %w", f.Name, err)
	}
	return buf, nil
}

// storageClass is what the pickle's torch.FloatStorage etc. resolve to.
type storageClass struct {
	name  string
	dtype builder.DataType // Undefined when unsupported
}

// storageRef is a storage named by a persistent id; its bytes are read from
// the archive only when a selected tensor uses it.
type storageRef struct {
	class *storageClass
	key   string
	numel int
}

// ptTensor is a tensor as pickled: a view of a storage.
type ptTensor struct {
	storage *storageRef
	offset  int
	size    []int
	stride  []int
}

// unsupportedTensor stands for a tensor kind this package cannot read; it
// is an error only when it is part of the state dict.
type unsupportedTensor struct{ kind string }

var storageDTypes = map[string]builder.DataType{
	"FloatStorage": builder.Float, "DoubleStorage": builder.Double,
	"HalfStorage": builder.Float16, "BFloat16Storage": builder.BFloat16,
	"LongStorage": builder.Int64, "IntStorage": builder.Int32,
	"ShortStorage": builder.Int16, "CharStorage": builder.Int8,
	"ByteStorage": builder.Uint8, "BoolStorage": builder.Bool,
}

type callFunc func(args ...any) (any, error)

func (f callFunc) Call(args ...any) (any, error) { return f(args...) }

func (a *archive) unpickle(pkl []byte) (any, error) {
	a.refs = map[string]*storageRef{}
	u := pickle.NewUnpickler(strings.NewReader(string(pkl)))
	u.FindClass = a.findClass
	u.PersistentLoad = a.persistentLoad
	return u.Load()
}

func (a *archive) findClass(module, name string) (any, error) {
	switch module + "." + name {
	case "torch._utils._rebuild_tensor_v2":
		return callFunc(rebuildTensorV2), nil
	case "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state":
		return callFunc(func(args ...any) (any, error) {
			if len(args) < 1 {
				return nil, fmt.Errorf("%s: no arguments", name)
			}
			return args[0], nil
		}), nil
	case "torch._tensor._rebuild_from_type_v2", "torch._tensor._rebuild_from_type":
		return callFunc(func(args ...any) (any, error) {
			if len(args) < 3 {
				return nil, fmt.Errorf("%s: %d arguments, want at least 3", name, len(args))
			}
			fn, ok1 := args[0].(types.Callable)
			targs, ok2 := args[2].(*types.Tuple)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("%s: unexpected arguments %s and %s", name, describe(args[0]), describe(args[2]))
			}
			return fn.Call(*targs...)
		}), nil
	case "torch._utils._rebuild_sparse_tensor", "torch._utils._rebuild_sparse_csr_tensor":
		return unsupportedKind("sparse tensor"), nil
	case "torch._utils._rebuild_qtensor":
		return unsupportedKind("quantized tensor"), nil
	case "torch._utils._rebuild_meta_tensor_no_storage":
		return unsupportedKind("meta tensor"), nil
	case "torch._utils._rebuild_wrapper_subclass", "torch._utils._rebuild_device_tensor_from_numpy", "torch._utils._rebuild_xla_tensor", "torch._utils._rebuild_mlc_tensor":
		return unsupportedKind(name), nil
	}
	if module == "torch" && strings.HasSuffix(name, "Storage") {
		return &storageClass{name: "torch." + name, dtype: storageDTypes[name]}, nil
	}
	return &pyClass{module: module, name: name}, nil
}

// pyClass stands for any other Python class or function in the pickle
// (training scripts store numpy scalars, argparse namespaces and the like
// next to the state dict). Calling or instantiating it gives a pyObject that
// accepts and ignores its state.
type pyClass struct{ module, name string }

// pyObject is an instance of a pyClass.
type pyObject struct{ class *pyClass }

func (c *pyClass) Call(...any) (any, error)  { return &pyObject{class: c}, nil }
func (c *pyClass) PyNew(...any) (any, error) { return &pyObject{class: c}, nil }
func (o *pyObject) PySetState(any) error     { return nil }

func unsupportedKind(kind string) callFunc {
	return func(...any) (any, error) { return &unsupportedTensor{kind: kind}, nil }
}

func (a *archive) persistentLoad(pid any) (any, error) {
	t, ok := pid.(*types.Tuple)
	if !ok || t.Len() < 5 {
		return nil, fmt.Errorf("persistent id is %s, want a ('storage', type, key, location, numel) tuple", describe(pid))
	}
	if s, _ := t.Get(0).(string); s != "storage" {
		return nil, fmt.Errorf("persistent id kind is %s, want 'storage'", describe(t.Get(0)))
	}
	cls, ok1 := t.Get(1).(*storageClass)
	key, ok2 := t.Get(2).(string)
	numel, ok3 := t.Get(4).(int)
	if !ok1 || !ok2 || !ok3 || numel < 0 {
		return nil, fmt.Errorf("storage persistent id (%s, %s, %s) is not (storage type, key, numel)", describe(t.Get(1)), describe(t.Get(2)), describe(t.Get(4)))
	}
	if ref, ok := a.refs[key]; ok {
		if ref.class.name != cls.name || ref.numel != numel {
			return nil, fmt.Errorf("storage %q is %s of %d elements and %s of %d", key, ref.class.name, ref.numel, cls.name, numel)
		}
		return ref, nil
	}
	ref := &storageRef{class: cls, key: key, numel: numel}
	a.refs[key] = ref
	return ref, nil
}

func rebuildTensorV2(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %d arguments, want 6", len(args))
	}
	st, ok := args[0].(*storageRef)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: storage is %s", describe(args[0]))
	}
	off, ok := args[1].(int)
	if !ok || off < 0 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: storage offset is %s, want a non-negative int", describe(args[1]))
	}
	size, err := intTuple(args[2], "size")
	if err != nil {
		return nil, err
	}
	stride, err := intTuple(args[3], "stride")
	if err != nil {
		return nil, err
	}
	if len(size) != len(stride) {
		return nil, fmt.Errorf("_rebuild_tensor_v2: size %v and stride %v differ in rank", size, stride)
	}
	return &ptTensor{storage: st, offset: off, size: size, stride: stride}, nil
}

func intTuple(v any, what string) ([]int, error) {
	t, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %s is %s, want a tuple of ints", what, describe(v))
	}
	out := make([]int, t.Len())
	for i := range out {
		n, ok := t.Get(i).(int)
		if !ok {
			return nil, fmt.Errorf("_rebuild_tensor_v2: %s element %d is %s, want an int", what, i, describe(t.Get(i)))
		}
		out[i] = n
	}
	return out, nil
}

type ptEntry struct {
	key string
	t   any // *ptTensor or *unsupportedTensor
}

// dictEntries returns the entries of a pickled dict or OrderedDict in order.
func dictEntries(v any) ([]types.DictEntry, bool) {
	switch d := v.(type) {
	case *types.OrderedDict:
		var out []types.DictEntry
		for e := d.List.Front(); e != nil; e = e.Next() {
			if oe, ok := e.Value.(*types.OrderedDictEntry); ok {
				out = append(out, types.DictEntry{Key: oe.Key, Value: oe.Value})
			}
		}
		return out, true
	case *types.Dict:
		return *d, true
	}
	return nil, false
}

// tensorDict checks that v is a dict from strings to tensors.
func tensorDict(v any) ([]ptEntry, error) {
	entries, ok := dictEntries(v)
	if !ok {
		return nil, fmt.Errorf("the pickle holds %s, not a dict of tensors", describe(v))
	}
	out := make([]ptEntry, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		k, ok := e.Key.(string)
		if !ok {
			return nil, fmt.Errorf("not a dict of tensors: a key is %s, not a string", describe(e.Key))
		}
		if seen[k] {
			return nil, fmt.Errorf("not a dict of tensors: key %q appears twice", k)
		}
		seen[k] = true
		switch e.Value.(type) {
		case *ptTensor, *unsupportedTensor:
		default:
			return nil, fmt.Errorf("not a dict of tensors: entry %q is %s, not a tensor", k, describe(e.Value))
		}
		out = append(out, ptEntry{key: k, t: e.Value})
	}
	return out, nil
}

// selectStateDict finds the state dict: the top-level dict, or its
// "state_dict" or "model" entry.
func selectStateDict(obj any) ([]ptEntry, []string, error) {
	direct, err := tensorDict(obj)
	if err == nil {
		return direct, nil, nil
	}
	top, ok := dictEntries(obj)
	if !ok {
		return nil, nil, err
	}
	for _, name := range []string{"state_dict", "model"} {
		for _, e := range top {
			if k, _ := e.Key.(string); k != name {
				continue
			}
			inner, ierr := tensorDict(e.Value)
			if ierr != nil {
				return nil, nil, fmt.Errorf("top-level entry %q: %w", name, ierr)
			}
			var others []string
			for _, o := range top {
				if k, ok := o.Key.(string); ok && k != name {
					others = append(others, k)
				} else if !ok {
					others = append(others, describe(o.Key))
				}
			}
			sort.Strings(others)
			note := fmt.Sprintf("tensors read from the top-level %q entry", name)
			if len(others) > 0 {
				note += "; other entries ignored: " + strings.Join(others, ", ")
			}
			return inner, []string{note}, nil
		}
	}
	return nil, nil, fmt.Errorf("%w (and there is no \"state_dict\" or \"model\" entry)", err)
}

// materialise returns a contiguous tensor for a pickled view.
func (a *archive) materialise(key string, v any, budget *int64) (*builder.Tensor, string, error) {
	if u, ok := v.(*unsupportedTensor); ok {
		return nil, "", fmt.Errorf("%s is not supported", u.kind)
	}
	pt := v.(*ptTensor)
	st := pt.storage
	if st.class.dtype == builder.Undefined {
		return nil, "", fmt.Errorf("unsupported storage type %s", st.class.name)
	}
	es := int64(st.class.dtype.Size())
	dims := make([]int64, len(pt.size))
	numel := uint64(1)
	for i, s := range pt.size {
		if s < 0 {
			return nil, "", fmt.Errorf("size %v has a negative dimension", pt.size)
		}
		if pt.stride[i] < 0 {
			return nil, "", fmt.Errorf("stride %v has a negative entry", pt.stride)
		}
		dims[i] = int64(s)
		hi, lo := bits.Mul64(numel, uint64(s))
		if hi != 0 || lo > math.MaxInt64/uint64(es) {
			return nil, "", fmt.Errorf("size %v is too large", pt.size)
		}
		numel = lo
	}
	nbytes := int64(numel) * es
	t := &builder.Tensor{Name: key, DType: st.class.dtype, Dims: dims, Raw: []byte{}}
	if numel == 0 {
		return t, "", nil
	}
	// Highest element index touched: offset + sum((size-1)*stride).
	last := new(big.Int).SetInt64(int64(pt.offset))
	for i, s := range pt.size {
		last.Add(last, new(big.Int).Mul(big.NewInt(int64(s-1)), big.NewInt(int64(pt.stride[i]))))
	}
	if !last.IsInt64() || last.Int64() >= int64(st.numel) {
		return nil, "", fmt.Errorf("view (offset %d, size %v, stride %v) reaches past the end of storage %q of %d elements", pt.offset, pt.size, pt.stride, st.key, st.numel)
	}
	if nbytes > *budget {
		return nil, "", fmt.Errorf("%d bytes of tensor data exceed what a %d-byte checkpoint can reasonably hold", nbytes, a.size)
	}
	*budget -= nbytes
	data, err := a.storage(st)
	if err != nil {
		return nil, "", err
	}
	contiguous := true
	want := 1
	for i := len(pt.size) - 1; i >= 0; i-- {
		if pt.size[i] != 1 && pt.stride[i] != want {
			contiguous = false
		}
		want *= pt.size[i]
	}
	if contiguous {
		start := int64(pt.offset) * es
		t.Raw = append([]byte(nil), data[start:start+nbytes]...)
		return t, "", nil
	}
	// Gather element by element with an odometer over the indices.
	raw := make([]byte, nbytes)
	idx := make([]int, len(pt.size))
	pos := pt.offset
	for out := int64(0); out < nbytes; out += es {
		copy(raw[out:out+es], data[int64(pos)*es:])
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			pos += pt.stride[d]
			if idx[d] < pt.size[d] {
				break
			}
			pos -= pt.stride[d] * idx[d]
			idx[d] = 0
		}
	}
	t.Raw = raw
	return t, fmt.Sprintf("tensor %q: made contiguous from stride %v, storage offset %d", key, pt.stride, pt.offset), nil
}

// storage returns the bytes of a storage, reading each once.
func (a *archive) storage(st *storageRef) ([]byte, error) {
	if b, ok := a.storages[st.key]; ok {
		return b, nil
	}
	name := a.prefix + "data/" + st.key
	f, ok := a.files[name]
	if !ok {
		return nil, fmt.Errorf("storage %q: zip entry %s is missing", st.key, name)
	}
	want := uint64(st.numel) * uint64(st.class.dtype.Size())
	if f.UncompressedSize64 != want {
		return nil, fmt.Errorf("storage %q: %s of %d elements needs %d bytes but zip entry %s holds %d", st.key, st.class.name, st.numel, want, name, f.UncompressedSize64)
	}
	b, err := a.readEntry(f, want)
	if err != nil {
		return nil, err
	}
	a.storages[st.key] = b
	return b, nil
}

// describe names the Python type of a decoded pickle value for errors,
// without printing the (possibly hostile, possibly cyclic) value itself.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return "a string"
	case int, *big.Int:
		return "an int"
	case float64:
		return "a float"
	case bool:
		return "a bool"
	case []byte:
		return "bytes"
	case *types.List:
		return "a list"
	case *types.Tuple:
		return "a tuple"
	case *types.Dict, *types.OrderedDict:
		return "a dict"
	case *pyObject:
		return "a " + x.class.module + "." + x.class.name + " object"
	case *pyClass:
		return x.module + "." + x.name
	case *storageClass:
		return x.name
	case *ptTensor, *unsupportedTensor:
		return "a tensor"
	case *storageRef:
		return "a storage"
	}
	return fmt.Sprintf("a %T", v)
}
