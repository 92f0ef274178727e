package export

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// externalAlign is the alignment of tensors in external data files: the
// page size, as onnx uses, so that runtimes can mmap them.
const externalAlign = 4096

// autoExternalThreshold (a variable for tests) is the size from which tensors move to external
// data when a model would otherwise exceed protobuf's 2 GiB limit (the
// default size_threshold of onnx.save_model).
var autoExternalThreshold int64 = 1024

// WriteOptions tunes WriteFile.
type WriteOptions struct {
	// ExternalDataThreshold moves tensors of at least this many bytes to
	// an external data file. 0 means never, unless the model would
	// exceed protobuf's 2 GiB limit; then tensors of 1 KiB and more move
	// automatically.
	ExternalDataThreshold int64
	// ExternalDataFile is the data file's name, in the model's directory;
	// default "<model file name>.data", such as "model.onnx.data".
	ExternalDataFile string
	// ValueInfo records intermediate value types (see ProtoOptions).
	ValueInfo bool
}

// WriteFile writes m to path atomically: the model (and the external data
// file, if any) is written to a temporary file in the same directory,
// synced, and renamed over the final name, so that a crash never leaves a
// half-written file under that name. On error, temporary files are removed
// and existing files are left as they were.
func WriteFile(path string, m *builder.Model, opt WriteOptions) error {
	mp, err := ToProtoWith(m, ProtoOptions{ValueInfo: opt.ValueInfo})
	if err != nil {
		return err
	}
	return WriteProtoFile(path, mp, opt)
}

// WriteProtoFile writes a ModelProto to path atomically, with external
// data as opt says (see WriteFile). Tensors moved to external data are
// replaced in mp by their external references.
func WriteProtoFile(path string, mp *onnxpb.ModelProto, opt WriteOptions) (err error) {
	if mp == nil || mp.Graph == nil {
		return fmt.Errorf("export: writing %s: model has no graph", path)
	}
	threshold := opt.ExternalDataThreshold
	if threshold < 0 {
		return fmt.Errorf("export: writing %s: ExternalDataThreshold %d is negative", path, threshold)
	}
	if threshold == 0 && int64(proto.Size(mp)) > maxProtoSize {
		threshold = autoExternalThreshold
	}
	dataName := opt.ExternalDataFile
	if dataName == "" {
		dataName = filepath.Base(path) + ".data"
	}
	if dataName != filepath.Base(dataName) || strings.ContainsAny(dataName, `/\`) || dataName == "." || dataName == ".." {
		return fmt.Errorf("export: writing %s: ExternalDataFile %q must be a plain file name (it goes next to the model)", path, dataName)
	}
	dir := filepath.Dir(path)

	var tmps []string
	defer func() {
		if err != nil {
			for _, t := range tmps {
				os.Remove(t)
			}
		}
	}()

	var dataTmp string
	if threshold > 0 {
		var moved []*onnxpb.TensorProto
		_ = forEachTensor(mp.Graph, func(tp *onnxpb.TensorProto) error {
			if tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL && tp.RawData != nil && int64(len(tp.RawData)) >= threshold {
				moved = append(moved, tp)
			}
			return nil
		})
		if len(moved) > 0 {
			f, err := os.CreateTemp(dir, "."+dataName+".tmp-*")
			if err != nil {
				return fmt.Errorf("export: writing external data for %s: %w", path, err)
			}
			dataTmp = f.Name()
			tmps = append(tmps, dataTmp)
			refs, err := writeExternal(f, moved, dataName)
			if cerr := closeSynced(f); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("export: writing external data %s: %w", filepath.Join(dir, dataName), err)
			}
			// Only now, with the data safely written, point the tensors at it.
			for i, tp := range moved {
				tp.RawData = nil
				tp.ExternalData = refs[i]
				tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
			}
		}
	}
	if n := int64(proto.Size(mp)); n > maxProtoSize {
		return fmt.Errorf("export: writing %s: model is %d bytes, over protobuf's 2 GiB limit even with external data above %d bytes", path, n, threshold)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("export: writing %s: %w", path, err)
	}
	modelTmp := f.Name()
	tmps = append(tmps, modelTmp)
	err = StreamProto(f, mp)
	if cerr := closeSynced(f); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("export: writing %s: %w", path, err)
	}
	if dataTmp != "" {
		if err := os.Rename(dataTmp, filepath.Join(dir, dataName)); err != nil {
			return fmt.Errorf("export: writing %s: %w", path, err)
		}
	}
	if err := os.Rename(modelTmp, path); err != nil {
		return fmt.Errorf("export: writing %s: %w", path, err)
	}
	tmps = nil
	return syncDir(dir)
}

// streamMin (a variable for tests) is the size from which StreamProto writes a field straight from
// its data instead of marshalling it into a buffer first.
var streamMin = 64 << 10

// StreamProto writes the deterministic protobuf encoding of mp to w, the
// same bytes as MarshalProto, without ever holding the whole encoding in
// memory: large bytes fields (tensor raw_data) are written from the
// tensors' own memory, large sub-messages (the graph, initializers, Loop
// bodies) are written field by field after a length prefix computed with
// proto.Size, and only runs of small fields are marshalled into buffers.
// It does not check protobuf's 2 GiB limit (MarshalProto does).
func StreamProto(w io.Writer, mp *onnxpb.ModelProto) error {
	if mp == nil {
		return errors.New("export: nil model")
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := streamMessage(bw, mp.ProtoReflect()); err != nil {
		return fmt.Errorf("export: serializing model: %w", err)
	}
	return bw.Flush()
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// streamMessage writes m's encoding to w. Protobuf-go marshals the fields of
// generated messages in field-number order and unknown fields last, so
// writing the fields one by one in that order gives the same bytes.
func streamMessage(w *bufio.Writer, m protoreflect.Message) error {
	var fds []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		fds = append(fds, fd)
		return true
	})
	sort.Slice(fds, func(i, j int) bool { return fds[i].Number() < fds[j].Number() })
	var small protoreflect.Message // pending run of small fields
	flush := func() error {
		if small == nil {
			return nil
		}
		b, err := deterministic.Marshal(small.Interface())
		small = nil
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	var buf []byte
	prefix := func(num protoreflect.FieldNumber, n int) error {
		buf = protowire.AppendTag(buf[:0], num, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(n))
		_, err := w.Write(buf)
		return err
	}
	sub := func(num protoreflect.FieldNumber, sm protoreflect.Message) error {
		n := proto.Size(sm.Interface())
		if err := prefix(num, n); err != nil {
			return err
		}
		if n < streamMin {
			b, err := deterministic.Marshal(sm.Interface())
			if err != nil {
				return err
			}
			_, err = w.Write(b)
			return err
		}
		return streamMessage(w, sm)
	}
	for _, fd := range fds {
		v := m.Get(fd)
		switch {
		case fd.Kind() == protoreflect.BytesKind && !fd.IsList() && len(v.Bytes()) >= streamMin:
			if err := flush(); err != nil {
				return err
			}
			if err := prefix(fd.Number(), len(v.Bytes())); err != nil {
				return err
			}
			if _, err := w.Write(v.Bytes()); err != nil {
				return err
			}
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			if err := flush(); err != nil {
				return err
			}
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if err := sub(fd.Number(), l.Get(i).Message()); err != nil {
					return err
				}
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap() && proto.Size(v.Message().Interface()) >= streamMin:
			if err := flush(); err != nil {
				return err
			}
			if err := sub(fd.Number(), v.Message()); err != nil {
				return err
			}
		default:
			if small == nil {
				small = m.New()
			}
			small.Set(fd, v)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	_, err := w.Write(m.GetUnknown())
	return err
}

// writeExternal streams the tensors' data to f, each at an aligned offset,
// and returns their external_data entries.
func writeExternal(f *os.File, tensors []*onnxpb.TensorProto, location string) ([][]*onnxpb.StringStringEntryProto, error) {
	w := bufio.NewWriterSize(f, 1<<20)
	var off int64
	zeros := make([]byte, externalAlign)
	refs := make([][]*onnxpb.StringStringEntryProto, len(tensors))
	for i, tp := range tensors {
		if pad := (externalAlign - off%externalAlign) % externalAlign; pad > 0 {
			if _, err := w.Write(zeros[:pad]); err != nil {
				return nil, err
			}
			off += pad
		}
		n, err := w.Write(tp.RawData)
		if err != nil {
			return nil, err
		}
		refs[i] = []*onnxpb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String(location)},
			{Key: proto.String("offset"), Value: proto.String(strconv.FormatInt(off, 10))},
			{Key: proto.String("length"), Value: proto.String(strconv.Itoa(n))},
		}
		off += int64(n)
	}
	return refs, w.Flush()
}

// closeSynced makes f world-readable like an ordinary file (CreateTemp
// makes it private), syncs it to disk and closes it.
func closeSynced(f *os.File) error {
	err := f.Chmod(0o644)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("export: syncing directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("export: syncing directory %s: %w", dir, err)
	}
	return nil
}
