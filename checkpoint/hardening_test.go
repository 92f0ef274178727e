package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"
)

// legacyPickle is the object pickle of {key: tensor} as the legacy format
// writes it: the persistent id has a sixth entry, the view metadata (None
// here, or (view key, offset, size)).
func legacyPickle(key, storageType string, numel, offset int, size, stride []int, view *[3]int) []byte {
	p := newPk().op("}(").str(key).global("torch._utils", "_rebuild_tensor_v2").op("((").str("storage").
		global("torch", storageType).str("0").str("cpu").int(numel)
	if view == nil {
		p.op("N")
	} else {
		p.op("(").str("v").int(view[1]).int(view[2]).op("t")
	}
	p.op("tQ").int(offset).tuple(size...).tuple(stride...).op("\x89)tR").op("u.")
	return p.Bytes()
}

// legacyFileOf lays out a legacy torch.save file: magic number, protocol
// version, system info, the object, the storage key list, then each
// storage as an int64 element count and its bytes.
func legacyFileOf(obj []byte, keys []string, storages ...[]byte) []byte {
	var b bytes.Buffer
	b.Write(legacyMagic)
	b.WriteString(".")
	b.WriteString("\x80\x02M\xe9\x03.")
	b.Write(newPk().op("}(").str("protocol_version").op("M\xe9\x03").str("little_endian").op("\x88").op("u.").Bytes())
	b.Write(obj)
	list := newPk().op("](")
	for _, k := range keys {
		list.str(k)
	}
	b.Write(list.op("e.").Bytes())
	for _, s := range storages {
		b.Write(s)
	}
	return b.Bytes()
}

// counted is a legacy storage record: count, then data.
func counted(count int64, data []byte) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, uint64(count)), data...)
}

func f32s(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// Sizes that overflow int64 arithmetic, or that only fit after wrapping,
// are refused by both PyTorch readers (issue 11, section 3).
func TestHostileSizes(t *testing.T) {
	big := 1<<62 + 2 // 4*big wraps to 8: the old check accepted an 8-byte storage
	cases := []struct {
		name   string
		data   []byte
		legacy bool
		want   string
	}{
		{"zip numel*4 wraps to the entry size", torchZip(t, tensorPickle("w", "FloatStorage", big, 1<<62, []int{2}, []int{1}), make([]byte, 8)), false,
			`tensor "w": storage "0": torch.FloatStorage of 4611686018427387906 elements is too large`},
		{"zip numel*8 wraps to the entry size", torchZip(t, tensorPickle("w", "DoubleStorage", 1<<61+1, 1<<61, []int{1}, []int{1}), make([]byte, 8)), false,
			`tensor "w": storage "0": torch.DoubleStorage of 2305843009213693953 elements is too large`},
		{"zip size product overflows", torchZip(t, tensorPickle("w", "FloatStorage", 1, 0, []int{1 << 32, 1 << 32}, []int{0, 0}), make([]byte, 4)), false,
			`tensor "w": size [4294967296 4294967296] is too large`},
		{"zip size*stride overflows", torchZip(t, tensorPickle("w", "FloatStorage", 2, 1<<62, []int{3}, []int{1 << 62}), make([]byte, 8)), false,
			`tensor "w": view (offset 4611686018427387904, size [3], stride [4611686018427387904]) reaches past the end of storage "0" of 2 elements`},
		{"zip offset past a huge storage", torchZip(t, tensorPickle("w", "FloatStorage", math.MaxInt64, math.MaxInt64-1, []int{1}, []int{1}), make([]byte, 8)), false,
			`torch.FloatStorage of 9223372036854775807 elements is too large`},
		{"legacy count differs from the object's", legacyFileOf(legacyPickle("w", "FloatStorage", 2, 0, []int{2}, []int{1}, nil), []string{"0"}, counted(1<<40, f32s(1, 2))), true,
			`storage "0": the file holds 1099511627776 elements, the object says 2`},
		{"legacy numel*4 wraps", legacyFileOf(legacyPickle("w", "FloatStorage", big, 0, []int{2}, []int{1}, nil), []string{"0"}, counted(int64(big), f32s(1, 2))), true,
			`storage "0": torch.FloatStorage of 4611686018427387906 elements is too large`},
		{"legacy storage truncated", legacyFileOf(legacyPickle("w", "FloatStorage", 3, 0, []int{3}, []int{1}, nil), []string{"0"}, counted(3, f32s(1, 2))), true,
			`storage "0": torch.FloatStorage of 3 elements needs 12 bytes at byte`},
		{"legacy view past its storage", legacyFileOf(legacyPickle("w", "FloatStorage", 2, 0, []int{1}, []int{1}, &[3]int{0, 1, 2}), []string{"0"}, counted(2, f32s(1, 2))), true,
			`storage "0": view "v" of 2 elements at 1 reaches past its 2 elements`},
		{"legacy view at a huge offset", legacyFileOf(legacyPickle("w", "FloatStorage", 2, 0, []int{1}, []int{1}, &[3]int{0, math.MaxInt64, 2}), []string{"0"}, counted(2, f32s(1, 2))), true,
			`storage "0": view "v" of 2 elements at 9223372036854775807 reaches past its 2 elements`},
		{"legacy unlisted storage", legacyFileOf(legacyPickle("w", "FloatStorage", 2, 0, []int{2}, []int{1}, nil), nil), true,
			`tensor "w": storage "0" is not in the file's storage key list`},
		{"legacy unused storage", legacyFileOf(legacyPickle("w", "FloatStorage", 2, 0, []int{2}, []int{1}, nil), []string{"0", "9"}, counted(2, f32s(1, 2))), true,
			`storage "9" is listed but the object never uses it`},
		{"legacy hostile pickle length", legacyFileOf([]byte("\x80\x02X\xff\xff\xff\x7f"), nil), true,
			`object at byte 70: pickle: opcode 0x58 at byte 2: argument of 2147483647 bytes runs past the end of the 13-byte pickle`},
		{"legacy truncated", legacyMagic, true,
			`magic number at byte 0: pickle: ends without a STOP opcode (truncated?)`},
		{"legacy ends after the magic", append(append([]byte{}, legacyMagic...), '.'), true,
			`protocol version: the file ends at byte 15, before it (truncated?)`},
		{"legacy big-endian", bytes.Replace(legacyFileOf(nil, nil), []byte("little_endian\x88"), []byte("little_endian\x89"), 1), true,
			`written on a big-endian machine: not supported`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			read := ReadPyTorch
			if c.legacy {
				read = ReadPyTorchLegacy
			}
			sd, err := read(bytes.NewReader(c.data), int64(len(c.data)))
			if err == nil {
				t.Fatalf("read %v, want an error containing %q", sd.Keys, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %q", err, c.want)
			}
		})
	}
}

// Views with strides near the int64 limit, on dimensions of size 1, are
// gathered correctly (the odometer never steps past a dimension's end).
func TestHugeStridesOnUnitDimensions(t *testing.T) {
	data := torchZip(t, tensorPickle("w", "FloatStorage", 4, 1, []int{2, 1}, []int{2, math.MaxInt64}), f32s(1, 2, 3, 4))
	sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if v, dims, _ := sd.Float32("w"); !reflect.DeepEqual(v, []float32{2, 4}) || !reflect.DeepEqual(dims, []int64{2, 1}) {
		t.Errorf("w = %v %v, want [2 4] [2 1]", v, dims)
	}
}

// A legacy view (old torch's view metadata) reads its window of the root
// storage.
func TestLegacyView(t *testing.T) {
	data := legacyFileOf(legacyPickle("w", "FloatStorage", 4, 0, []int{2}, []int{1}, &[3]int{0, 1, 2}), []string{"0"}, counted(4, f32s(1, 2, 3, 4)))
	sd, err := ReadPyTorchLegacy(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := sd.Float32("w"); !reflect.DeepEqual(v, []float32{2, 3}) {
		t.Errorf("w = %v, want [2 3]", v)
	}
	if sd.Format != FormatPyTorchLegacy || len(sd.Notes) != 0 {
		t.Errorf("format %q, notes %q", sd.Format, sd.Notes)
	}
}

// A panic of the third-party pickle decoder becomes an error; a panic of
// this package's own code is not hidden: it reaches the caller (and the
// fuzzers) as a panic.
func TestOwnPanicsAreNotHidden(t *testing.T) {
	testHookGlobal = func(u *unpickler, module, name string) any {
		if module == "test" && name == "bug" {
			return u.fn(func(...any) (any, error) {
				var m map[string]int
				m["x"] = 1 // a bug: assignment to a nil map
				return nil, nil
			})
		}
		return nil
	}
	defer func() { testHookGlobal = nil }()
	data := torchZip(t, newPk().op("}(").str("w").global("test", "bug").op(")Ru.").Bytes(), nil)
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(p.(error).Error(), "assignment to entry in nil map") {
			t.Fatalf("recovered %v, want the own panic re-raised", p)
		}
	}()
	sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
	t.Fatalf("returned %v, %v; want a panic", sd, err)
}

// Hostile object trees: cycles, depth and sharing are bounded.
func TestHostileObjectTrees(t *testing.T) {
	// d = {}; d["a"] = d  (MEMOIZE and BINGET build the cycle)
	cycle := newPk().op("}q\x00").str("a").op("h\x00s.").Bytes()
	// A whole module whose _modules holds itself.
	selfModule := newPk().global("__main__", "M").op(")\x81q\x00}(").str("_parameters").op("}").
		str("_modules").op("}(").str("m").op("h\x00uub.").Bytes()
	deep := newPk()
	for i := 0; i < maxDepth+2; i++ {
		deep.op("}").str("a")
	}
	deep.op("N")
	for i := 0; i < maxDepth+2; i++ {
		deep.op("s")
	}
	deep.op(".")
	// 40 levels of {"a": x, "b": x}: 2^40 paths to one tensor.
	wide := newPk().global("torch._utils", "_rebuild_tensor_v2").op("((").str("storage").
		global("torch", "FloatStorage").str("0").str("cpu").int(1).op("tQ").int(0).tuple(1).tuple(1).op("\x89)tR")
	for i := 0; i < 40; i++ {
		wide.op("q\x01}(").str("a").op("h\x01").str("b").op("h\x01u")
	}
	wide.op(".")
	cases := []struct {
		name string
		pkl  []byte
		want string
	}{
		{"dict containing itself", cycle, "a: contains itself"},
		{"module containing itself", selfModule, "m: contains itself"},
		{"nested too deep", deep.Bytes(), "nested more than 64 levels deep"},
		{"shared exponentially", wide.Bytes(), "more than 131072 tensors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := torchZip(t, c.pkl, make([]byte, 4))
			sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, %v; want an error containing %q", sd, err, c.want)
			}
		})
	}
}
