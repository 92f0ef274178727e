// Package checkpoint reads PyTorch weights without Python: what torch.save
// writes (the zip format of PyTorch 1.6 and later, and the legacy format
// before it) and safetensors files. It also writes safetensors files, the
// format in which the Python reference and the Go tests exchange tensors.
//
// The weights may come as people save them: a flat state_dict, a training
// checkpoint with the state_dict under a key beside epoch and optimizer
// state, nested dicts, or a whole pickled nn.Module, read without its class
// code. Nothing in a pickle is executed (see unpickle.go). StripPrefix,
// Rename and LoadPair put the names in the layout a caller expects, and
// Diagnose says how a set of keys differs from the layouts it knows.
//
// Every reader validates sizes against the file before allocating, with
// overflow-checked arithmetic, and turns a panic of the third-party pickle
// decoder into an error naming the file, so hostile or damaged files give
// errors, never crashes.
package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/builder"
)

// Format names stored in StateDict.Format.
const (
	FormatPyTorch       = "pytorch-zip"
	FormatPyTorchLegacy = "pytorch-legacy"
	FormatSafetensors   = "safetensors"
)

// StateDict is a flat map from parameter names to tensors.
type StateDict struct {
	// Keys lists the tensor names in file order: the order of the pickled
	// dict for PyTorch files, the order of the JSON header for safetensors.
	Keys []string
	// Tensors maps each name to its tensor, contiguous, little-endian. The
	// tensor's Name field equals its key.
	Tensors map[string]*builder.Tensor
	// Format is FormatPyTorch, FormatPyTorchLegacy or FormatSafetensors
	// (for LoadPair, the two files' formats joined with "+" when they
	// differ).
	Format string
	// Metadata holds the safetensors __metadata__ strings; nil otherwise.
	Metadata map[string]string
	// Notes records anything the reader did that a caller may want to
	// know, such as taking the tensors from a "state_dict" entry.
	Notes []string
	// Origin is set for a toolkit's checkpoint (OpenNMT-py, JoeyNMT, the
	// chatbot tutorial): its other entries, such as options and
	// vocabularies.
	Origin *Origin
	// Views says, for each tensor of a torch.save file, where in the
	// file's storages its elements lie. Tensors with equal views are one
	// tensor in PyTorch (tied weights, which torch.save writes once), as
	// an in-place update of one changes the other. Keyed by the names as
	// read (StripPrefix and Rename leave it as it is); nil for
	// safetensors.
	Views map[string]View
}

// View is where a tensor of a torch.save file keeps its elements: the
// storage's key in the file, the first element's offset in it, and the
// tensor's size and strides as written ("[3 4]").
type View struct {
	Storage      string
	Offset       int
	Size, Stride string
}

// Tensor returns the tensor called key, or an error naming the key.
func (s *StateDict) Tensor(key string) (*builder.Tensor, error) {
	t, ok := s.Tensors[key]
	if !ok || t == nil {
		return nil, fmt.Errorf("checkpoint: no tensor %q in the state dict", key)
	}
	return t, nil
}

// Float32 returns the elements of the tensor called key as float32, with its
// shape. float16, bfloat16 and float64 tensors are converted (float64 values
// are rounded to the nearest float32) with builder.Tensor.ToFloat32; other
// types are an error naming the key. The returned slices are fresh copies.
func (s *StateDict) Float32(key string) ([]float32, []int64, error) {
	t, err := s.Tensor(key)
	if err != nil {
		return nil, nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	vals, err := t.ToFloat32()
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	return vals, append([]int64{}, t.Dims...), nil
}

// Load reads a state dict from path, choosing the reader by the file's
// content rather than its extension: a zip archive is read as a torch.save
// checkpoint, a file starting with torch.save's legacy magic number in the
// legacy format, a file starting with an 8-byte header length and a JSON
// object as safetensors.
func Load(path string) (*StateDict, error) {
	return load(path, false)
}

// LoadPyTorch reads a checkpoint written by torch.save, in the zip or the
// legacy format (see ReadPyTorch for what it may hold).
func LoadPyTorch(path string) (*StateDict, error) {
	return load(path, true)
}

func load(path string, torchOnly bool) (*StateDict, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	kind := sniff(head[:n], size, filepath.Ext(path))
	if torchOnly && kind == kindSafetensors {
		kind = kindUnknown
	}
	switch kind {
	case kindZip:
		sd, err := ReadPyTorch(f, size)
		return sd, wrapFile(path, err)
	case kindLegacy:
		sd, err := ReadPyTorchLegacy(f, size)
		return sd, wrapFile(path, err)
	case kindSafetensors:
		sd, err := ReadSafetensors(f, size)
		return sd, wrapFile(path, err)
	case kindTar:
		return nil, fmt.Errorf("%s: %w", path, errTar)
	}
	// An ONNX file given where the checkpoint goes (a model directory's
	// graph, or torch.onnx's export): say so, since the reader cannot
	// tell from the bytes alone (a protobuf has no magic number).
	onnx := ""
	if strings.EqualFold(filepath.Ext(path), ".onnx") {
		onnx = ": by its name an ONNX model (what export writes), not a checkpoint; give the PyTorch checkpoint the model was saved in"
	}
	if torchOnly {
		return nil, fmt.Errorf("%s: not a torch.save checkpoint (neither a zip archive nor the legacy format)%s", path, onnx)
	}
	return nil, fmt.Errorf("%s: not a PyTorch zip checkpoint or safetensors file (nor torch.save's legacy format)%s", path, onnx)
}

// LoadSafetensors reads a safetensors file.
func LoadSafetensors(path string) (*StateDict, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sd, err := ReadSafetensors(f, size)
	return sd, wrapFile(path, err)
}

func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err // already names the path
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file", path)
	}
	return f, st.Size(), nil
}

func wrapFile(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", path, err)
}

type fileKind int

const (
	kindUnknown fileKind = iota
	kindZip
	kindSafetensors
	kindLegacy
	kindTar
)

// legacyMagic is how torch.save's legacy format starts: PROTO 2, LONG1 of
// ten bytes holding the magic number 0x1950a86a20f9469cfc6c.
var legacyMagic = []byte{0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19}

var errTar = fmt.Errorf("a tar archive: the tar-based serialization of torch < 0.4 is not supported; load it in Python and re-save it with torch.save(obj, path)")

func sniff(head []byte, size int64, ext string) fileKind {
	if bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06")) {
		return kindZip
	}
	if bytes.HasPrefix(head, legacyMagic) {
		return kindLegacy
	}
	if len(head) >= 262 && string(head[257:262]) == "ustar" {
		return kindTar
	}
	if len(head) >= 9 {
		n := binary.LittleEndian.Uint64(head)
		// A JSON header starting with '{': a truncated file still goes to
		// the safetensors reader, which then says what is wrong.
		if head[8] == '{' && n >= 2 && n <= maxHeaderSize {
			return kindSafetensors
		}
	}
	if strings.EqualFold(ext, ".safetensors") && size >= 8 {
		return kindSafetensors
	}
	return kindUnknown
}
