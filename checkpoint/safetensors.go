package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/atomicfile"
)

// maxHeaderSize is the largest safetensors JSON header accepted, as in the
// reference implementation (100 MB).
const maxHeaderSize = 100 << 20

// safetensors dtype names and the element types they map to.
var stDTypes = map[string]builder.DataType{
	"F64": builder.Double, "F32": builder.Float, "F16": builder.Float16,
	"BF16": builder.BFloat16, "I64": builder.Int64, "I32": builder.Int32,
	"I16": builder.Int16, "I8": builder.Int8, "U64": builder.Uint64,
	"U32": builder.Uint32, "U16": builder.Uint16, "U8": builder.Uint8,
	"BOOL": builder.Bool,
}

func stName(d builder.DataType) (string, bool) {
	for k, v := range stDTypes {
		if v == d {
			return k, true
		}
	}
	return "", false
}

type stEntry struct {
	name   string
	dtype  builder.DataType
	shape  []int64
	begin  int64
	end    int64
	nbytes int64
}

// ReadSafetensors reads a safetensors file of size bytes from r: an 8-byte
// little-endian header length N, N bytes of JSON header, then the tensor
// data. Offsets must lie inside the data area, must not overlap, and must
// cover exactly dtype size times the number of elements. Keys come in header
// order. Errors do not name the file; Load and LoadSafetensors add it.
func ReadSafetensors(r io.ReaderAt, size int64) (*StateDict, error) {
	if size < 8 {
		return nil, fmt.Errorf("safetensors: file is %d bytes, too short for the 8-byte header length", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors: reading header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > uint64(size-8) {
		return nil, fmt.Errorf("safetensors: header length %d is larger than the file (%d bytes; truncated file?)", n, size)
	}
	if n > maxHeaderSize {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the limit of %d bytes", n, maxHeaderSize)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("safetensors: reading %d-byte header: %w", n, err)
	}
	dataStart := 8 + int64(n)
	dataLen := size - dataStart
	entries, meta, err := parseSTHeader(hdr)
	if err != nil {
		return nil, err
	}
	sd := &StateDict{
		Tensors:  make(map[string]*builder.Tensor, len(entries)),
		Format:   FormatSafetensors,
		Metadata: meta,
	}
	for _, e := range entries {
		if e.begin < 0 || e.end < e.begin || e.end > dataLen {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] out of bounds (data area is %d bytes; truncated file?)", e.name, e.begin, e.end, dataLen)
		}
		if e.end-e.begin != e.nbytes {
			return nil, fmt.Errorf("safetensors: tensor %q: %s shape %v needs %d bytes but data_offsets [%d, %d] hold %d", e.name, e.dtype, e.shape, e.nbytes, e.begin, e.end, e.end-e.begin)
		}
	}
	// Overlaps: sort by start and compare with the previous non-empty end.
	order := make([]*stEntry, len(entries))
	for i := range entries {
		order[i] = &entries[i]
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].begin < order[j].begin })
	var covered int64
	var prev *stEntry
	for _, e := range order {
		if e.nbytes == 0 {
			continue
		}
		if prev != nil && e.begin < prev.end {
			return nil, fmt.Errorf("safetensors: tensors %q [%d, %d] and %q [%d, %d] overlap", prev.name, prev.begin, prev.end, e.name, e.begin, e.end)
		}
		covered += e.nbytes
		prev = e
	}
	if covered != dataLen {
		sd.Notes = append(sd.Notes, fmt.Sprintf("%d of the %d data bytes belong to no tensor", dataLen-covered, dataLen))
	}
	for _, e := range entries {
		raw := make([]byte, e.nbytes)
		if e.nbytes > 0 {
			if _, err := r.ReadAt(raw, dataStart+e.begin); err != nil {
				return nil, fmt.Errorf("safetensors: tensor %q: reading %d bytes: %w", e.name, e.nbytes, err)
			}
		}
		sd.Keys = append(sd.Keys, e.name)
		sd.Tensors[e.name] = &builder.Tensor{Name: e.name, DType: e.dtype, Dims: e.shape, Raw: raw}
	}
	return sd, nil
}

type stJSONEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// parseSTHeader decodes the JSON header, keeping key order and rejecting
// duplicate keys, unknown fields and malformed entries.
func parseSTHeader(hdr []byte) ([]stEntry, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: header is not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("safetensors: header is not a JSON object")
	}
	var entries []stEntry
	var meta map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("safetensors: header is not JSON: %v", err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, nil, fmt.Errorf("safetensors: header has key %q twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("safetensors: header is not JSON: %v", err)
		}
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, nil, fmt.Errorf("safetensors: __metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		e, err := parseSTEntry(name, raw)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // closing '}'
		return nil, nil, fmt.Errorf("safetensors: header is not JSON: %v", err)
	}
	// Only trailing whitespace (the reference pads with spaces) may follow.
	if off := dec.InputOffset(); off > int64(len(hdr)) || len(bytes.TrimSpace(hdr[off:])) != 0 {
		return nil, nil, fmt.Errorf("safetensors: header is not JSON: data after the closing brace")
	}
	return entries, meta, nil
}

func parseSTEntry(name string, raw json.RawMessage) (stEntry, error) {
	var j stJSONEntry
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return stEntry{}, fmt.Errorf("safetensors: tensor %q: bad header entry: %v", name, err)
	}
	if j.DType == nil || j.Shape == nil || j.DataOffsets == nil {
		return stEntry{}, fmt.Errorf("safetensors: tensor %q: header entry needs dtype, shape and data_offsets", name)
	}
	dt, ok := stDTypes[*j.DType]
	if !ok {
		return stEntry{}, fmt.Errorf("safetensors: tensor %q: unsupported dtype %q", name, *j.DType)
	}
	if len(*j.DataOffsets) != 2 {
		return stEntry{}, fmt.Errorf("safetensors: tensor %q: data_offsets has %d numbers, want 2", name, len(*j.DataOffsets))
	}
	nbytes, err := byteCount(*j.Shape, dt)
	if err != nil {
		return stEntry{}, fmt.Errorf("safetensors: tensor %q: %v", name, err)
	}
	shape := *j.Shape
	if shape == nil {
		shape = []int64{}
	}
	return stEntry{name: name, dtype: dt, shape: shape, begin: (*j.DataOffsets)[0], end: (*j.DataOffsets)[1], nbytes: nbytes}, nil
}

// byteCount returns numel(shape)*size(dt), rejecting negative dimensions and
// overflow.
func byteCount(shape []int64, dt builder.DataType) (int64, error) {
	n := uint64(dt.Size())
	if n == 0 {
		return 0, fmt.Errorf("unsupported element type %v", dt)
	}
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v: dimension %d is negative", shape, i)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("shape %v of %v is too large", shape, dt)
		}
		n = lo
	}
	// A zero dimension makes everything 0, but an overflow before it is
	// still caught above: the product is computed in order.
	return int64(n), nil
}

// MarshalSafetensors encodes tensors and metadata as a safetensors file:
// keys sorted, data laid out in key order, the JSON header padded with
// spaces to a multiple of 8 bytes. The output depends only on the inputs.
// Each map key is the tensor name; a tensor whose Name is set must agree.
func MarshalSafetensors(tensors map[string]*builder.Tensor, metadata map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(tensors))
	for k := range tensors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type entry struct {
		DType       string  `json:"dtype"`
		Shape       []int64 `json:"shape"`
		DataOffsets []int64 `json:"data_offsets"`
	}
	header := make(map[string]any, len(keys)+1)
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, k := range keys {
		t := tensors[k]
		switch {
		case k == "":
			return nil, errors.New("safetensors: empty tensor name")
		case k == "__metadata__":
			return nil, errors.New("safetensors: a tensor may not be called __metadata__")
		case t == nil:
			return nil, fmt.Errorf("safetensors: tensor %q is nil", k)
		case t.Name != "" && t.Name != k:
			return nil, fmt.Errorf("safetensors: tensor stored under %q is named %q", k, t.Name)
		}
		name, ok := stName(t.DType)
		if !ok {
			return nil, fmt.Errorf("safetensors: tensor %q: unsupported dtype %v", k, t.DType)
		}
		nbytes, err := byteCount(t.Dims, t.DType)
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %v", k, err)
		}
		if int64(len(t.Raw)) != nbytes {
			return nil, fmt.Errorf("safetensors: tensor %q: %d bytes of %v data for shape %v (want %d)", k, len(t.Raw), t.DType, t.Dims, nbytes)
		}
		shape := append([]int64{}, t.Dims...)
		header[k] = entry{DType: name, Shape: shape, DataOffsets: []int64{off, off + nbytes}}
		off += nbytes
	}
	hdr, err := json.Marshal(header) // maps marshal with sorted keys
	if err != nil {
		return nil, fmt.Errorf("safetensors: encoding header: %w", err)
	}
	if pad := (8 - len(hdr)%8) % 8; pad > 0 {
		hdr = append(hdr, bytes.Repeat([]byte(" "), pad)...)
	}
	out := make([]byte, 8, 8+int64(len(hdr))+off)
	binary.LittleEndian.PutUint64(out, uint64(len(hdr)))
	out = append(out, hdr...)
	for _, k := range keys {
		out = append(out, tensors[k].Raw...)
	}
	return out, nil
}

// WriteSafetensors writes tensors and metadata to path as a safetensors file
// (see MarshalSafetensors), atomically: it writes a temporary file in the same
// directory, syncs it and renames it over path.
func WriteSafetensors(path string, tensors map[string]*builder.Tensor, metadata map[string]string) error {
	data, err := MarshalSafetensors(tensors, metadata)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteFile(path, data, 0o644)
}
