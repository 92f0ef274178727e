package onnxfile

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/atomicfile"
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
	// ExternalDataFile names the data file, in the model's directory;
	// default "<model file name>.data", such as "model.onnx.data". The
	// file written carries a tag of its content before the extension,
	// such as "model.onnx.0123456789abcdef.data" (see WriteFile).
	ExternalDataFile string
	// ValueInfo records intermediate value types (see ProtoOptions).
	ValueInfo bool
}

// WriteFile writes m to path atomically: a crash, or an error, at any
// point leaves either the previous model or the new one, never a partial
// file and never a graph paired with another graph's external data.
//
// Without external data, the model is written with atomicfile (a synced
// temporary file renamed over path). With external data, the data file's
// name carries the first 16 hex digits of the SHA-256 of its content
// ("m.onnx.0123456789abcdef.data"), and the graph refers to that name.
// The order is: the data file is written and renamed into place (beside
// the old one, whose name differs unless its content is the same), then
// the graph is renamed over path, and only then are data files of the
// same name pattern other than the new one removed. A crash before the
// graph's rename leaves the old graph with its old data (the new data
// file is an orphan that the next write removes); after it, the new graph
// has its data, and stale files are removed by the next write. Since the
// tag derives from the content, writing the same model twice gives the
// same files. Two models in one directory must not share an
// ExternalDataFile name, and concurrent writers of the same path must be
// serialised by the caller.
func WriteFile(path string, m *builder.Model, opt WriteOptions) error {
	mp, err := ToProtoWith(m, ProtoOptions{ValueInfo: opt.ValueInfo})
	if err != nil {
		return err
	}
	return WriteProtoFile(path, mp, opt)
}

// testHookCommitted, set by tests, runs after the data file (stage
// "data") and after the graph (stage "graph") are renamed into place; an
// error returns from WriteProtoFile at once, leaving the files as a crash
// at that point would.
var testHookCommitted func(stage string) error

// WriteProtoFile writes a ModelProto to path atomically, with external
// data as opt says (see WriteFile). Tensors moved to external data are
// replaced in mp by their external references.
func WriteProtoFile(path string, mp *onnxpb.ModelProto, opt WriteOptions) error {
	if mp == nil || mp.Graph == nil {
		return fmt.Errorf("onnxfile: writing %s: model has no graph", path)
	}
	threshold := opt.ExternalDataThreshold
	if threshold < 0 {
		return fmt.Errorf("onnxfile: writing %s: ExternalDataThreshold %d is negative", path, threshold)
	}
	if threshold == 0 && int64(proto.Size(mp)) > maxProtoSize {
		threshold = autoExternalThreshold
	}
	dataName := opt.ExternalDataFile
	if dataName == "" {
		dataName = filepath.Base(path) + ".data"
	}
	if dataName != filepath.Base(dataName) || strings.ContainsAny(dataName, `/\`) || dataName == "." || dataName == ".." {
		return fmt.Errorf("onnxfile: writing %s: ExternalDataFile %q must be a plain file name (it goes next to the model)", path, dataName)
	}
	dir := filepath.Dir(path)
	hook := func(stage string) error {
		if testHookCommitted != nil {
			return testHookCommitted(stage)
		}
		return nil
	}

	var dataFile string // the tagged name written, if any
	var dataNew bool    // whether no file of that name existed before
	if threshold > 0 {
		var moved []*onnxpb.TensorProto
		_ = forEachTensor(mp.Graph, func(tp *onnxpb.TensorProto) error {
			if tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL && tp.RawData != nil && int64(len(tp.RawData)) >= threshold {
				moved = append(moved, tp)
			}
			return nil
		})
		if len(moved) > 0 {
			var err error
			if dataFile, dataNew, err = writeExternal(dir, dataName, moved); err != nil {
				return fmt.Errorf("onnxfile: writing external data for %s: %w", path, err)
			}
			if err := hook("data"); err != nil {
				return err
			}
		}
	}
	// A failure from here on leaves the old graph: the new data file,
	// unless the old graph has the same data, is of no use to it.
	graphErr := func(err error) error {
		if dataNew {
			os.Remove(filepath.Join(dir, dataFile))
		}
		return err
	}
	if n := int64(proto.Size(mp)); n > maxProtoSize {
		return graphErr(fmt.Errorf("onnxfile: writing %s: model is %d bytes, over protobuf's 2 GiB limit even with external data above %d bytes", path, n, threshold))
	}
	if err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return StreamProto(w, mp) }); err != nil {
		return graphErr(fmt.Errorf("onnxfile: %w", err))
	}
	if err := hook("graph"); err != nil {
		return err
	}
	return removeStaleData(dir, dataName, dataFile)
}

// dataTagLen is the number of hex digits of the content tag in external
// data file names.
const dataTagLen = 16

// taggedDataName inserts tag before name's extension: "m.onnx.data" ->
// "m.onnx.TAG.data", "weights" -> "weights.TAG".
func taggedDataName(name, tag string) string {
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + tag + ext
}

// isTaggedDataName reports whether file is name tagged by taggedDataName
// with some tag.
func isTaggedDataName(name, file string) bool {
	ext := filepath.Ext(name)
	rest, ok := strings.CutPrefix(file, strings.TrimSuffix(name, ext)+".")
	if !ok {
		return false
	}
	tag, ok := strings.CutSuffix(rest, ext)
	return ok && len(tag) == dataTagLen && strings.Trim(tag, "0123456789abcdef") == ""
}

// removeStaleData removes the data files of earlier writes (name tagged,
// other than keep), once the graph that no longer refers to them is in
// place.
func removeStaleData(dir, name, keep string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("onnxfile: removing stale external data in %s: %w", dir, err)
	}
	removed := false
	for _, e := range ents {
		if e.Name() != keep && e.Type().IsRegular() && isTaggedDataName(name, e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("onnxfile: removing stale external data: %w", err)
			}
			removed = true
		}
	}
	if removed {
		return atomicfile.SyncDir(dir)
	}
	return nil
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
		return errors.New("onnxfile: nil model")
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := streamMessage(bw, mp.ProtoReflect()); err != nil {
		return fmt.Errorf("onnxfile: serializing model: %w", err)
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

// writeExternal writes the tensors' data, each at an aligned offset, to a
// data file in dir named after name tagged with the data's hash, commits
// it, and only then points the tensors at it. It returns the file's name
// and whether no file of that name existed before.
func writeExternal(dir, name string, tensors []*onnxpb.TensorProto) (file string, isNew bool, err error) {
	f, err := atomicfile.Create(filepath.Join(dir, name), 0o644)
	if err != nil {
		return "", false, err
	}
	defer f.Discard()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	var off int64
	zeros := make([]byte, externalAlign)
	offsets := make([]int64, len(tensors))
	for i, tp := range tensors {
		if pad := (externalAlign - off%externalAlign) % externalAlign; pad > 0 {
			if _, err := w.Write(zeros[:pad]); err != nil {
				return "", false, err
			}
			off += pad
		}
		if _, err := w.Write(tp.RawData); err != nil {
			return "", false, err
		}
		offsets[i] = off
		off += int64(len(tp.RawData))
	}
	if err := w.Flush(); err != nil {
		return "", false, err
	}
	file = taggedDataName(name, hex.EncodeToString(h.Sum(nil))[:dataTagLen])
	_, statErr := os.Lstat(filepath.Join(dir, file))
	if err := f.CommitAs(filepath.Join(dir, file)); err != nil {
		return "", false, err
	}
	for i, tp := range tensors {
		tp.ExternalData = []*onnxpb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String(file)},
			{Key: proto.String("offset"), Value: proto.String(strconv.FormatInt(offsets[i], 10))},
			{Key: proto.String("length"), Value: proto.String(strconv.Itoa(len(tp.RawData)))},
		}
		tp.RawData = nil
		tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	}
	return file, errors.Is(statErr, os.ErrNotExist), nil
}
