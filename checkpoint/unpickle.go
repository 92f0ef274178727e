package checkpoint

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// Nothing in a pickle is ever executed here. A pickle names Python globals
// (GLOBAL opcodes) and asks for them to be called (REDUCE) or instantiated
// (NEWOBJ, BUILD); Python's unpickler runs whatever it names. This reader
// resolves a global to one of three things, none of which can run code:
//
//   - a tensor or storage constructor of torch (torch._utils._rebuild_*,
//     torch.FloatStorage, ...), a container (set, frozenset), all written
//     here as Go functions that only build values from their arguments;
//   - a refusal, for globals whose only use in a pickle is to run commands,
//     touch files or evaluate code (os.system, builtins.eval, ...), so that
//     such a file is reported instead of read;
//   - for everything else (the user's module classes such as
//     __main__.EncoderLSTM, torch.nn.LSTM, numpy scalars, argparse
//     namespaces), a stand-in that records the arguments and the state it is
//     given and does nothing else. A stand-in is never a tensor.

// unpickler decodes one pickle with gopickle, the only third-party code
// here. Its panics (gopickle indexes its stack without checks) become
// errors; a panic of this package's own callbacks is re-raised, because it
// is a bug that must not be hidden from tests and fuzzers.
type unpickler struct {
	refs     map[string]*storageRef
	legacy   bool // accept the legacy format's ('module', ...) persistent ids
	ownPanic any
}

func newUnpickler(legacy bool) *unpickler {
	return &unpickler{refs: map[string]*storageRef{}, legacy: legacy}
}

// catchOwn, deferred by every callback gopickle calls into this package,
// records a panic of ours before gopickle's caller sees it.
func (u *unpickler) catchOwn() {
	if p := recover(); p != nil {
		u.ownPanic = p
		panic(p)
	}
}

func (u *unpickler) load(pkl []byte) (obj any, err error) {
	p := pickle.NewUnpickler(bytes.NewReader(pkl))
	p.FindClass = u.findClass
	p.PersistentLoad = u.persistentLoad
	defer func() {
		if r := recover(); r != nil {
			if u.ownPanic != nil {
				panic(u.ownPanic)
			}
			obj, err = nil, fmt.Errorf("malformed checkpoint: the pickle decoder failed: %v", r)
		}
	}()
	return p.Load()
}

// callFunc is a Go function standing for a Python callable that only
// builds a value from its arguments.
type callFunc struct {
	u  *unpickler
	fn func(args ...any) (any, error)
}

func (f *callFunc) Call(args ...any) (any, error) {
	defer f.u.catchOwn()
	return f.fn(args...)
}

func (u *unpickler) fn(f func(args ...any) (any, error)) *callFunc { return &callFunc{u: u, fn: f} }

// storageClass is what the pickle's torch.FloatStorage etc. resolve to.
type storageClass struct {
	name  string
	dtype builder.DataType // Undefined when unsupported
}

// pyClass stands for any other Python class or function named in the
// pickle. Calling or instantiating it gives a pyObject; nothing runs.
type pyClass struct {
	u            *unpickler
	module, name string
}

// pyObject is an instance of a pyClass: the arguments it was made with and
// the state BUILD gave it (an object's __dict__, or its __setstate__
// argument). A pickled nn.Module is a pyObject whose state holds
// _parameters, _buffers and _modules.
type pyObject struct {
	class *pyClass
	args  []any
	state any
	// items are what SETITEM(S) stored in the object: Python calls its
	// __setitem__, as for a collections.defaultdict (a dict subclass,
	// pickled as its class called with the default factory, then its
	// items).
	items *types.Dict
}

// Set records an item SETITEM(S) gives the object.
func (o *pyObject) Set(key, value any) {
	defer o.class.u.catchOwn()
	if o.items == nil {
		o.items = types.NewDict()
	}
	o.items.Set(key, value)
}

func (c *pyClass) Call(args ...any) (any, error) {
	defer c.u.catchOwn()
	return &pyObject{class: c, args: args}, nil
}

func (c *pyClass) PyNew(args ...any) (any, error) {
	defer c.u.catchOwn()
	return &pyObject{class: c, args: args}, nil
}

// PySetState records the state; a (dict, slots) pair keeps the dict.
func (o *pyObject) PySetState(state any) error {
	defer o.class.u.catchOwn()
	if t, ok := state.(*types.Tuple); ok && t.Len() == 2 {
		if _, isDict := dictEntries(t.Get(0)); isDict {
			state = t.Get(0)
		}
	}
	o.state = state
	return nil
}

// attr returns the entry name of the object's state dict.
func (o *pyObject) attr(name string) (any, bool) {
	entries, ok := dictEntries(o.state)
	if !ok {
		return nil, false
	}
	for _, e := range entries {
		if k, _ := e.Key.(string); k == name {
			return e.Value, true
		}
	}
	return nil, false
}

// isModule tells whether the object is a pickled torch.nn.Module: its state
// has the _parameters and _modules dicts every Module has.
func (o *pyObject) isModule() bool {
	_, p := o.attr("_parameters")
	_, m := o.attr("_modules")
	return p && m
}

func (o *pyObject) className() string { return o.class.module + "." + o.class.name }

// pySet is a Python set or frozenset; only its string members matter (the
// names in a module's _non_persistent_buffers_set).
type pySet struct{ strs map[string]bool }

func (u *unpickler) makeSet(args ...any) (any, error) {
	s := &pySet{strs: map[string]bool{}}
	if len(args) == 0 {
		return s, nil
	}
	var items []any
	switch v := args[0].(type) {
	case *types.List:
		items = *v
	case *types.Tuple:
		items = *v
	default:
		return nil, fmt.Errorf("set: argument is %s, want a list", describe(args[0]))
	}
	for _, it := range items {
		if str, ok := it.(string); ok {
			s.strs[str] = true
		}
	}
	return s, nil
}

// unsupportedTensor stands for a tensor kind this package cannot read; it
// is an error only when it is part of the state dict.
type unsupportedTensor struct{ kind string }

func (u *unpickler) unsupported(kind string) *callFunc {
	return u.fn(func(...any) (any, error) { return &unsupportedTensor{kind: kind}, nil })
}

var storageDTypes = map[string]builder.DataType{
	"FloatStorage": builder.Float, "DoubleStorage": builder.Double,
	"HalfStorage": builder.Float16, "BFloat16Storage": builder.BFloat16,
	"LongStorage": builder.Int64, "IntStorage": builder.Int32,
	"ShortStorage": builder.Int16, "CharStorage": builder.Int8,
	"ByteStorage": builder.Uint8, "BoolStorage": builder.Bool,
}

// dangerousModules are modules whose globals, in a pickle, serve only to
// run commands, evaluate code or touch files and the network when Python
// unpickles it. Pickles written with protocol 2 name Python 2 modules
// (posix for os, __builtin__ for builtins, commands for subprocess).
var dangerousModules = map[string]bool{
	"os": true, "posix": true, "nt": true, "subprocess": true, "commands": true,
	"sys": true, "shutil": true, "socket": true, "importlib": true, "imp": true,
	"runpy": true, "pty": true, "code": true, "codeop": true, "ctypes": true,
	"multiprocessing": true, "webbrowser": true, "pickle": true, "_pickle": true,
	"cPickle": true, "marshal": true, "pdb": true, "bdb": true, "timeit": true,
	"platform": true, "signal": true, "asyncio": true, "threading": true,
	"_thread": true, "thread": true, "tempfile": true, "io": true, "_io": true,
	"urllib": true, "urllib2": true, "http": true, "ftplib": true,
	"smtplib": true, "telnetlib": true, "requests": true,
	"_posixsubprocess": true,
}

// dangerousGlobals are single globals of otherwise harmless modules that
// build code objects or call methods by name.
var dangerousGlobals = map[string]bool{
	"types.FunctionType": true, "types.CodeType": true, "types.LambdaType": true,
	"types.MethodType": true, "operator.methodcaller": true, "operator.attrgetter": true,
}

// safeBuiltins are the builtins a checkpoint may legitimately name: value
// types. Every other builtin (eval, exec, compile, open, getattr,
// __import__, ...) is refused.
var safeBuiltins = map[string]bool{
	"set": true, "frozenset": true, "list": true, "dict": true, "tuple": true,
	"object": true, "slice": true, "complex": true, "bytearray": true,
	"bytes": true, "range": true, "int": true, "float": true, "str": true,
	"bool": true, "unicode": true, "long": true, "type": true,
}

// refuseGlobal says why a global is refused, or "" when it is not.
func refuseGlobal(module, name string) string {
	root, _, _ := strings.Cut(module, ".")
	switch {
	case root == "builtins" || root == "__builtin__":
		if !safeBuiltins[name] {
			return "a builtin that evaluates code, opens files or reaches into objects"
		}
	case dangerousModules[root]:
		return "a function of a module that runs commands, evaluates code or touches files"
	case dangerousGlobals[module+"."+name]:
		return "a function that builds code or calls methods by name"
	}
	return ""
}

// python3Name names a global as a pickle of protocol 2 spells it and, when
// that differs, as Python 3 users know it: posix.system (os.system).
func python3Name(module, name string) string {
	full := module + "." + name
	alias := map[string]string{"posix": "os", "nt": "os", "commands": "subprocess", "__builtin__": "builtins"}[module]
	switch {
	case full == "io.open" || full == "_io.open":
		alias = "builtins"
	case alias == "":
		return full
	}
	return full + " (" + alias + "." + name + ")"
}

// ErrCodeInPickle is wrapped by the error for a pickle that names a global
// whose only use is to run code when Python unpickles it.
var ErrCodeInPickle = fmt.Errorf("the pickle would run code in Python")

// testHookGlobal, set by tests, resolves globals before findClass does.
var testHookGlobal func(u *unpickler, module, name string) any

func (u *unpickler) findClass(module, name string) (_ any, err error) {
	defer u.catchOwn()
	if testHookGlobal != nil {
		if v := testHookGlobal(u, module, name); v != nil {
			return v, nil
		}
	}
	full := module + "." + name
	if why := refuseGlobal(module, name); why != "" {
		return nil, fmt.Errorf("%w: it names %s, %s; attnx executes nothing, but refuses a checkpoint that carries it", ErrCodeInPickle, python3Name(module, name), why)
	}
	switch full {
	case "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor":
		return u.fn(rebuildTensor), nil
	case "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state":
		return u.fn(func(args ...any) (any, error) {
			if len(args) < 1 {
				return nil, fmt.Errorf("%s: no arguments", name)
			}
			return args[0], nil
		}), nil
	case "torch._tensor._rebuild_from_type_v2", "torch._tensor._rebuild_from_type":
		// (func, type, args, state): a tensor subclass rebuilt by func.
		return u.fn(func(args ...any) (any, error) {
			if len(args) < 3 {
				return nil, fmt.Errorf("%s: %d arguments, want at least 3", name, len(args))
			}
			fn, ok1 := args[0].(*callFunc)
			targs, ok2 := args[2].(*types.Tuple)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("%s: unexpected arguments %s and %s", name, describe(args[0]), describe(args[2]))
			}
			return fn.fn(*targs...)
		}), nil
	case "torch._utils._rebuild_sparse_tensor", "torch._utils._rebuild_sparse_csr_tensor":
		return u.unsupported("sparse tensor"), nil
	case "torch._utils._rebuild_qtensor":
		return u.unsupported("quantized tensor"), nil
	case "torch._utils._rebuild_meta_tensor_no_storage":
		return u.unsupported("meta tensor"), nil
	case "torch._utils._rebuild_wrapper_subclass", "torch._utils._rebuild_device_tensor_from_numpy", "torch._utils._rebuild_xla_tensor", "torch._utils._rebuild_mlc_tensor":
		return u.unsupported(name), nil
	case "builtins.set", "__builtin__.set", "builtins.frozenset", "__builtin__.frozenset":
		return u.fn(u.makeSet), nil
	}
	if module == "torch" && strings.HasSuffix(name, "Storage") {
		return &storageClass{name: "torch." + name, dtype: storageDTypes[name]}, nil
	}
	return &pyClass{u: u, module: module, name: name}, nil
}

// storageRef is a storage named by a persistent id; its bytes are read only
// when a selected tensor uses it. A legacy view (view_metadata) is a window
// of another storage.
type storageRef struct {
	class *storageClass
	key   string
	numel int
	base  *storageRef // legacy views only
	at    int         // the view's first element in base
}

func (u *unpickler) persistentLoad(pid any) (_ any, err error) {
	defer u.catchOwn()
	t, ok := pid.(*types.Tuple)
	if ok && u.legacy && t.Len() == 4 {
		// ('module', class, source file, source): the legacy format names
		// each nn.Module subclass this way; the class stands for itself.
		if s, _ := t.Get(0).(string); s == "module" {
			return t.Get(1), nil
		}
	}
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
	ref, err := u.storageRef(cls, key, numel)
	if err != nil {
		return nil, err
	}
	if !u.legacy || t.Len() < 6 || t.Get(5) == nil {
		return ref, nil
	}
	// Legacy view_metadata: (view key, offset, view size), in elements.
	vm, ok := t.Get(5).(*types.Tuple)
	if !ok || vm.Len() != 3 {
		return nil, fmt.Errorf("storage %q: view metadata is %s, want a (key, offset, size) tuple", key, describe(t.Get(5)))
	}
	vkey, ok1 := vm.Get(0).(string)
	off, ok2 := vm.Get(1).(int)
	vsize, ok3 := vm.Get(2).(int)
	if !ok1 || !ok2 || !ok3 || off < 0 || vsize < 0 {
		return nil, fmt.Errorf("storage %q: view metadata (%s, %s, %s) is not (key, offset, size)", key, describe(vm.Get(0)), describe(vm.Get(1)), describe(vm.Get(2)))
	}
	if off > numel || vsize > numel-off {
		return nil, fmt.Errorf("storage %q: view %q of %d elements at %d reaches past its %d elements", key, vkey, vsize, off, numel)
	}
	view := &storageRef{class: cls, key: vkey, numel: vsize, base: ref, at: off}
	if old, ok := u.refs["view:"+vkey]; ok {
		if old.base != ref || old.at != off || old.numel != vsize {
			return nil, fmt.Errorf("storage view %q is described twice, differently", vkey)
		}
		return old, nil
	}
	u.refs["view:"+vkey] = view
	return view, nil
}

func (u *unpickler) storageRef(cls *storageClass, key string, numel int) (*storageRef, error) {
	if ref, ok := u.refs[key]; ok {
		if ref.class.name != cls.name || ref.numel != numel {
			return nil, fmt.Errorf("storage %q is %s of %d elements and %s of %d", key, ref.class.name, ref.numel, cls.name, numel)
		}
		return ref, nil
	}
	ref := &storageRef{class: cls, key: key, numel: numel}
	u.refs[key] = ref
	return ref, nil
}

// ptTensor is a tensor as pickled: a view of a storage.
type ptTensor struct {
	storage *storageRef
	offset  int
	size    []int
	stride  []int
}

// rebuildTensor is torch._utils._rebuild_tensor_v2 (storage, offset, size,
// stride, requires_grad, backward_hooks[, metadata]) and the older
// _rebuild_tensor (storage, offset, size, stride), as data.
func rebuildTensor(args ...any) (any, error) {
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
	case *types.Set, *types.FrozenSet, *pySet:
		return "a set"
	case *pyObject:
		return "a " + x.className() + " object"
	case *pyClass:
		return x.module + "." + x.name
	case *storageClass:
		return x.name
	case *ptTensor, *unsupportedTensor:
		return "a tensor"
	case *storageRef:
		return "a storage"
	case *callFunc:
		return "a torch function"
	}
	return fmt.Sprintf("a %T", v)
}
