package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// evilFixtures are pickles whose unpickling in Python runs a global that
// creates pwned-* in the working directory (make_fixtures.py), and the name
// the refusal must give.
var evilFixtures = []struct{ file, global, marker string }{
	{"evil_system.pt", "posix.system (os.system)", "pwned-system"},
	{"evil_open.pt", "io.open (builtins.open)", "pwned-open"},
	{"evil_subprocess.pt", "commands.call (subprocess.call)", "pwned-subprocess"},
	{"evil_eval.pt", "__builtin__.eval (builtins.eval)", "pwned-eval"},
	{"evil_module.pt", "posix.system (os.system)", "pwned-module"},
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// Reading a pickle that would run os.system, open, subprocess.call or eval
// in Python is refused with an error naming the global, and nothing is
// written: the reader runs in an empty working directory, which stays empty.
func TestNothingExecutesWhileReading(t *testing.T) {
	src, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, e := range evilFixtures {
		t.Run(e.file, func(t *testing.T) {
			p := filepath.Join(src, e.file)
			for _, load := range []func() (*StateDict, error){
				func() (*StateDict, error) { return Load(p) },
				func() (*StateDict, error) { return LoadModel(Files{Path: p}, nil) },
				func() (*StateDict, error) { return LoadPair(p, filepath.Join(src, "s2s_decoder.pt")) },
			} {
				sd, err := load()
				if err == nil {
					t.Fatalf("loaded %v, want a refusal", sd.Keys)
				}
				if !errors.Is(err, ErrCodeInPickle) || !strings.Contains(err.Error(), "it names "+e.global) || !strings.Contains(err.Error(), p) {
					t.Errorf("error %v, want ErrCodeInPickle naming %s and %s", err, e.global, p)
				}
			}
		})
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("reading left %v in the working directory", got)
	}
}

// The evil fixtures are real: Python's torch.load of each, in an empty
// directory, creates its marker file. (Otherwise the test above could not
// fail.) The whole-module one needs its class code and is left out.
func TestEvilFixturesRunCodeInPython(t *testing.T) {
	requireTorch(t)
	dir := t.TempDir()
	var files []string
	for _, e := range evilFixtures[:4] {
		p, err := filepath.Abs(filepath.Join("testdata", e.file))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	script := `
import os, sys, torch
os.chdir(sys.argv[1])
for f in sys.argv[2:]:
    torch.load(f)
`
	if out, err := runPython(script, append([]string{dir}, files...)...); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	want := []string{"pwned-eval", "pwned-open", "pwned-subprocess", "pwned-system"}
	if got := listDir(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Python's torch.load wrote %v, want %v", got, want)
	}
}

// Globals that are not refused become inert stand-ins: calling one yields
// an object that is never a tensor, whatever position it takes.
func TestStandInsNeverYieldTensors(t *testing.T) {
	// {"w": mylib.make_tensor(1)}: a call result where a tensor belongs.
	call := newPk().op("}(").str("w").global("mylib", "make_tensor").op("(K\x01tR").op("u.").Bytes()
	// torch._utils._rebuild_tensor_v2(mylib.storage(), 0, (1,), (1,)).
	fakeStorage := newPk().op("}(").str("w").global("torch._utils", "_rebuild_tensor_v2").op("(").
		global("mylib", "storage").op(")R").int(0).tuple(1).tuple(1).op("tR").op("u.").Bytes()
	// _rebuild_from_type_v2(mylib.evil, cls, (args), state).
	fromType := newPk().op("}(").str("w").global("torch._tensor", "_rebuild_from_type_v2").op("(").
		global("mylib", "evil").global("torch", "Tensor").op("(K\x01t}tR").op("u.").Bytes()
	// A whole module whose parameter is a call result.
	module := newPk().op("}(").str("m").global("__main__", "Net").op(")\x81").op("}(").
		str("_parameters").op("}(").str("weight").global("mylib", "param").op(")Ru").
		str("_modules").op("}").op("ub").op("u.").Bytes()
	cases := []struct {
		name string
		pkl  []byte
		want string
	}{
		{"call result as tensor", call, `no tensors in the pickle: the dict's entries hold none ("w" is a mylib.make_tensor object)`},
		{"call result as storage", fakeStorage, "_rebuild_tensor_v2: storage is a mylib.storage object"},
		{"stand-in as tensor rebuilder", fromType, "_rebuild_from_type_v2: unexpected arguments mylib.evil and a tuple"},
		{"call result as parameter", module, `module m (__main__.Net): _parameters entry "weight" is a mylib.param object, not a tensor`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := torchZip(t, c.pkl, nil)
			sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, %v; want an error containing %q", sd, err, c.want)
			}
		})
	}
}

// Every global resolves to a refusal, a stand-in that only records its
// arguments, a storage type, or one of the few pure constructors written
// here; no global maps to anything else.
func TestGlobalsResolveToDataOnly(t *testing.T) {
	pure := map[string]bool{
		"torch._utils._rebuild_tensor_v2": true, "torch._utils._rebuild_tensor": true,
		"torch._utils._rebuild_parameter": true, "torch._utils._rebuild_parameter_with_state": true,
		"torch._tensor._rebuild_from_type_v2": true, "torch._tensor._rebuild_from_type": true,
		"torch._utils._rebuild_sparse_tensor": true, "torch._utils._rebuild_sparse_csr_tensor": true,
		"torch._utils._rebuild_qtensor": true, "torch._utils._rebuild_meta_tensor_no_storage": true,
		"torch._utils._rebuild_wrapper_subclass": true, "torch._utils._rebuild_device_tensor_from_numpy": true,
		"torch._utils._rebuild_xla_tensor": true, "torch._utils._rebuild_mlc_tensor": true,
		"builtins.set": true, "__builtin__.set": true, "builtins.frozenset": true, "__builtin__.frozenset": true,
	}
	refused := []string{
		"posix.system", "os.system", "nt.system", "os.popen", "os.execv", "subprocess.Popen", "subprocess.call",
		"commands.getoutput", "__builtin__.eval", "builtins.exec", "builtins.compile", "__builtin__.open",
		"io.open", "builtins.__import__", "builtins.getattr", "importlib.import_module", "runpy.run_path",
		"shutil.rmtree", "socket.socket", "pty.spawn", "ctypes.CDLL", "pickle.loads", "marshal.loads",
		"types.FunctionType", "types.CodeType", "operator.methodcaller", "sys.exit", "webbrowser.open",
	}
	standIns := []string{
		"__main__.EncoderLSTM", "torch.nn.modules.rnn.LSTM", "collections.defaultdict", "numpy.core.multiarray.scalar",
		"argparse.Namespace", "pathlib.PosixPath", "torch.device", "torch.float32", "torch.load", "functools.partial",
		"_codecs.encode", "collections.Counter",
	}
	u := newUnpickler(false)
	resolve := func(full string) (any, error) {
		i := strings.LastIndexByte(full, '.')
		return u.findClass(full[:i], full[i+1:])
	}
	for name := range pure {
		v, err := resolve(name)
		if _, ok := v.(*callFunc); !ok || err != nil {
			t.Errorf("%s: %T, %v; want a pure constructor", name, v, err)
		}
		// Hostile arguments give errors or values, never a panic.
		if cf, ok := v.(*callFunc); ok {
			for _, args := range [][]any{nil, {nil}, {1, 2, 3, 4, 5, 6}, {"x", -1, nil, nil}} {
				cf.Call(args...)
			}
		}
	}
	for _, name := range refused {
		if v, err := resolve(name); !errors.Is(err, ErrCodeInPickle) {
			t.Errorf("%s: %T, %v; want a refusal", name, v, err)
		}
	}
	for _, name := range standIns {
		v, err := resolve(name)
		c, ok := v.(*pyClass)
		if !ok || err != nil {
			t.Errorf("%s: %T, %v; want a stand-in", name, v, err)
			continue
		}
		// Calling a stand-in only records the call.
		obj, err := c.Call("pwned")
		if o, ok := obj.(*pyObject); !ok || err != nil || o.class != c {
			t.Errorf("%s(): %v, %v", name, obj, err)
		}
	}
	if v, _ := resolve("torch.FloatStorage"); v == nil {
		t.Error("torch.FloatStorage unresolved")
	} else if _, ok := v.(*storageClass); !ok {
		t.Errorf("torch.FloatStorage: %T", v)
	}
}
