package onnxfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// LoadOptions tunes LoadWith.
type LoadOptions struct {
	// LoadExternalData reads tensors stored in external files (resolved
	// relative to the model's directory) into raw_data. Locations that
	// escape that directory (absolute paths, .. components, symlinks
	// pointing outside) are refused, and offsets and lengths are checked
	// against the data file's size.
	LoadExternalData bool
}

// Load decodes the ONNX model in the file at path. Tensors in external
// data files are left as references; use LoadWith to read them.
func Load(path string) (*onnxpb.ModelProto, error) {
	return LoadWith(path, LoadOptions{})
}

// LoadWith decodes the ONNX model at path with options. Errors name the
// file and what is wrong with it.
func LoadWith(path string, opt LoadOptions) (*onnxpb.ModelProto, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnxfile: %w", err)
	}
	mp, err := LoadBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if opt.LoadExternalData {
		if err := loadExternalData(mp, filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return mp, nil
}

// LoadBytes decodes a serialized ONNX model. It refuses data that is not
// valid protobuf, protobuf that lacks what every ONNX model has (an IR
// version and a graph), and tensors whose shape no data can have (a negative
// dimension, or more elements or bytes than int64 counts). External data is
// not resolved: there is no directory to resolve it in.
func LoadBytes(data []byte) (*onnxpb.ModelProto, error) {
	if len(data) == 0 {
		return nil, errors.New("not an ONNX model: the file is empty")
	}
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(data, m); err != nil {
		if why := truncation(data); why != "" {
			return nil, fmt.Errorf("not an ONNX model: %w (the file is truncated: %s)", err, why)
		}
		return nil, fmt.Errorf("not an ONNX model: %w", err)
	}
	if m.IrVersion == nil {
		return nil, errors.New("not an ONNX model: no ir_version")
	}
	if m.Graph == nil {
		return nil, errors.New("not an ONNX model: no graph")
	}
	if err := forEachTensor(m.Graph, checkTensorShape); err != nil {
		return nil, err
	}
	return m, nil
}

// Equal reports whether two models are the same message, field by field
// (protobuf equality): a model re-serialized with MarshalProto and loaded
// again with LoadBytes must be Equal to the one loaded first.
func Equal(a, b *onnxpb.ModelProto) bool { return proto.Equal(a, b) }

// checkTensorShape refuses a tensor whose element count, or byte size for
// types of fixed size, does not fit in int64: arithmetic on its shape would
// wrap around.
func checkTensorShape(tp *onnxpb.TensorProto) error {
	dt := builder.DataType(tp.GetDataType())
	var err error
	if dt.Size() > 0 {
		_, err = builder.ByteSize(dt, tp.Dims)
	} else {
		_, err = builder.ElementCount(tp.Dims)
	}
	if err != nil {
		return fmt.Errorf("tensor %q: %w", tp.GetName(), err)
	}
	return nil
}

// modelFields names ModelProto's fields for truncation messages.
var modelFields = map[protowire.Number]string{
	1: "ir_version", 2: "producer_name", 3: "producer_version", 4: "domain",
	5: "model_version", 6: "doc_string", 7: "graph", 8: "opset_import",
	14: "metadata_props", 20: "training_info", 25: "functions",
}

// truncation walks the top level of the wire format and, when the data
// ends in the middle of a field, says which; otherwise it returns "".
func truncation(data []byte) string {
	for off := 0; off < len(data); {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			if len(data)-off < 10 && errors.Is(protowire.ParseError(n), io.ErrUnexpectedEOF) {
				return fmt.Sprintf("it ends inside a field tag at byte %d", off)
			}
			return ""
		}
		name := modelFields[num]
		if name == "" {
			name = fmt.Sprintf("field %d", num)
		}
		if typ == protowire.BytesType {
			l, ln := protowire.ConsumeVarint(data[off+n:])
			if ln > 0 && uint64(len(data)-off-n-ln) < l {
				return fmt.Sprintf("%s at byte %d declares %d bytes but only %d remain", name, off, l, len(data)-off-n-ln)
			}
		}
		m := protowire.ConsumeFieldValue(num, typ, data[off+n:])
		if m < 0 {
			if errors.Is(protowire.ParseError(m), io.ErrUnexpectedEOF) {
				return fmt.Sprintf("it ends inside %s at byte %d", name, off)
			}
			return ""
		}
		off += n + m
	}
	return ""
}

// forEachTensor calls f on every tensor of g: initializers, tensor
// attributes (also in lists) and, recursively, those of subgraphs.
func forEachTensor(g *onnxpb.GraphProto, f func(*onnxpb.TensorProto) error) error {
	if g == nil {
		return nil
	}
	for _, t := range g.Initializer {
		if err := f(t); err != nil {
			return err
		}
	}
	for _, st := range g.SparseInitializer {
		for _, t := range []*onnxpb.TensorProto{st.Values, st.Indices} {
			if t != nil {
				if err := f(t); err != nil {
					return err
				}
			}
		}
	}
	for _, n := range g.Node {
		for _, a := range n.Attribute {
			if a.T != nil {
				if err := f(a.T); err != nil {
					return err
				}
			}
			for _, t := range a.Tensors {
				if err := f(t); err != nil {
					return err
				}
			}
			if err := forEachTensor(a.G, f); err != nil {
				return err
			}
			for _, sg := range a.Graphs {
				if err := forEachTensor(sg, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// externalRef is a parsed external_data entry list.
type externalRef struct {
	location       string
	offset, length int64
	hasLength      bool
}

func parseExternal(tp *onnxpb.TensorProto) (externalRef, error) {
	var r externalRef
	for _, e := range tp.ExternalData {
		var err error
		switch e.GetKey() {
		case "location":
			r.location = e.GetValue()
		case "offset":
			r.offset, err = strconv.ParseInt(e.GetValue(), 10, 64)
		case "length":
			r.length, err = strconv.ParseInt(e.GetValue(), 10, 64)
			r.hasLength = true
		}
		if err != nil {
			return r, fmt.Errorf("external data %s %q is not an integer", e.GetKey(), e.GetValue())
		}
	}
	if r.location == "" {
		return r, errors.New("external data has no location")
	}
	if r.offset < 0 || r.length < 0 {
		return r, fmt.Errorf("external data offset %d / length %d is negative", r.offset, r.length)
	}
	return r, nil
}

// safeDataPath resolves location inside dir, refusing anything that could
// point outside it, as ONNX Runtime does.
func safeDataPath(dir, location string) (string, error) {
	if filepath.IsAbs(location) || strings.HasPrefix(location, "/") || strings.HasPrefix(location, `\`) || filepath.VolumeName(location) != "" {
		return "", fmt.Errorf("external data location %q is an absolute path; it must be relative to the model's directory", location)
	}
	for _, part := range strings.FieldsFunc(location, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", fmt.Errorf("external data location %q has a \"..\" component; it must stay inside the model's directory", location)
		}
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("resolving the model's directory: %w", err)
	}
	p := filepath.Join(dir, filepath.FromSlash(location))
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("external data file %q: %w", location, err)
	}
	rel, err := filepath.Rel(realDir, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("external data location %q resolves to %s, outside the model's directory", location, real)
	}
	return real, nil
}

// loadExternalData reads every external tensor of mp into raw_data.
func loadExternalData(mp *onnxpb.ModelProto, dir string) error {
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	sizes := map[string]int64{}
	return forEachTensor(mp.Graph, func(tp *onnxpb.TensorProto) error {
		if tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
			return nil
		}
		ref, err := parseExternal(tp)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", tp.GetName(), err)
		}
		f, ok := files[ref.location]
		if !ok {
			p, err := safeDataPath(dir, ref.location)
			if err != nil {
				return fmt.Errorf("tensor %q: %w", tp.GetName(), err)
			}
			f, err = os.Open(p)
			if err != nil {
				return fmt.Errorf("tensor %q: %w", tp.GetName(), err)
			}
			st, err := f.Stat()
			if err != nil {
				f.Close()
				return fmt.Errorf("tensor %q: %w", tp.GetName(), err)
			}
			if !st.Mode().IsRegular() {
				f.Close()
				return fmt.Errorf("tensor %q: external data %q is not a regular file", tp.GetName(), ref.location)
			}
			files[ref.location] = f
			sizes[ref.location] = st.Size()
		}
		size := sizes[ref.location]
		if ref.offset > size {
			return fmt.Errorf("tensor %q: external data offset %d is beyond the end of %q (%d bytes)", tp.GetName(), ref.offset, ref.location, size)
		}
		length := size - ref.offset
		if ref.hasLength {
			length = ref.length
		}
		// Compare without adding: offset+length can overflow int64 and
		// pass a naive check, then make([]byte, length) panics.
		if length > size-ref.offset {
			return fmt.Errorf("tensor %q: external data of %d bytes at offset %d runs past the end of %q (%d bytes)", tp.GetName(), length, ref.offset, ref.location, size)
		}
		dt := builder.DataType(tp.GetDataType())
		if dt.Size() > 0 {
			want, err := builder.ByteSize(dt, tp.Dims)
			if err != nil {
				return fmt.Errorf("tensor %q: %w", tp.GetName(), err)
			}
			if want != length {
				return fmt.Errorf("tensor %q: external data has %d bytes, want %d for %v%v", tp.GetName(), length, want, dt, tp.Dims)
			}
		}
		buf := make([]byte, length)
		if _, err := f.ReadAt(buf, ref.offset); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
			return fmt.Errorf("tensor %q: reading external data from %q: %w", tp.GetName(), ref.location, err)
		}
		tp.RawData = buf
		tp.ExternalData = nil
		tp.DataLocation = nil
		return nil
	})
}
