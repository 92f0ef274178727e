package checkpoint

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"strings"

	"github.com/attnx/attnx/builder"
)

// maxPickleSize bounds data.pkl; a state dict's pickle is a few hundred
// bytes per tensor.
const maxPickleSize = 256 << 20

// ReadPyTorch reads a torch.save checkpoint (zip format) of size bytes from
// r. The tensors are found as selectStateDict describes (a dict of tensors,
// a training checkpoint, nested dicts, a whole pickled module); what that
// did to the names is recorded in Notes. Tensors are returned contiguous,
// whatever their strides and storage offsets; tensors sharing a storage get
// independent copies. Errors do not name the file; Load and LoadPyTorch add
// it.
func ReadPyTorch(r io.ReaderAt, size int64) (*StateDict, error) {
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
	if _, err := scanPickle(pkl); err != nil {
		return nil, fmt.Errorf("pytorch: %s: %w", pkls[0], err)
	}
	obj, err := newUnpickler(false).load(pkl)
	if err != nil {
		return nil, fmt.Errorf("pytorch: %s: %w", pkls[0], err)
	}
	sd, err := buildStateDict(obj, a, size, FormatPyTorch)
	if err != nil {
		return nil, fmt.Errorf("pytorch: %w", err)
	}
	return sd, nil
}

// storageSource gives the bytes of a storage named in the pickle.
type storageSource interface {
	storageBytes(st *storageRef) ([]byte, error)
}

// buildStateDict selects the tensors of a decoded pickle and materialises
// them from src, a file of size bytes.
func buildStateDict(obj any, src storageSource, size int64, format string) (*StateDict, error) {
	var origin *Origin
	entries, notes, err := []ptEntry(nil), []string(nil), error(nil)
	isToolkit := false
	if top, ok := dictEntries(obj); ok && stringKeys(top) {
		entries, notes, origin, isToolkit, err = selectToolkit(top)
		if err != nil {
			return nil, err
		}
	}
	if !isToolkit {
		if entries, notes, err = selectStateDict(obj); err != nil {
			return nil, err
		}
	}
	sd := &StateDict{Tensors: make(map[string]*builder.Tensor, len(entries)), Format: format, Notes: notes, Origin: origin}
	budget := 16*size + 64<<20 // tensors may share storage, but not without bound
	for _, e := range entries {
		t, note, err := materialise(e.key, e.t, src, size, &budget)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", e.key, err)
		}
		if note != "" {
			sd.Notes = append(sd.Notes, note)
		}
		sd.Keys = append(sd.Keys, e.key)
		sd.Tensors[e.key] = t
		if pt, ok := e.t.(*ptTensor); ok {
			if sd.Views == nil {
				sd.Views = map[string]View{}
			}
			sd.Views[e.key] = viewOf(pt)
		}
	}
	return sd, nil
}

// viewOf says where a tensor's elements lie: its storage (for a legacy
// view, the storage it is a view of) and its offset, shape and strides.
func viewOf(t *ptTensor) View {
	st, off := t.storage, t.offset
	for st.base != nil {
		st, off = st.base, off+st.at
	}
	return View{Storage: st.key, Offset: off, Size: fmt.Sprint(t.size), Stride: fmt.Sprint(t.stride)}
}

type archive struct {
	size     int64
	prefix   string
	files    map[string]*zip.File
	storages map[string][]byte
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

// storageNBytes is a storage's size in bytes, numel*elemsize, refused when
// it overflows.
func storageNBytes(st *storageRef) (uint64, error) {
	hi, lo := bits.Mul64(uint64(st.numel), uint64(st.class.dtype.Size()))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, fmt.Errorf("storage %q: %s of %d elements is too large", st.key, st.class.name, st.numel)
	}
	return lo, nil
}

// materialise returns a contiguous tensor for a pickled view. Every size is
// checked before it is used: the element count and byte size of the view
// without overflow, the highest element it touches inside its storage, and
// its bytes against what a file of fileSize bytes can hold.
func materialise(key string, v any, src storageSource, fileSize int64, budget *int64) (*builder.Tensor, string, error) {
	if u, ok := v.(*unsupportedTensor); ok {
		return nil, "", fmt.Errorf("%s is not supported", u.kind)
	}
	pt := v.(*ptTensor)
	st := pt.storage
	if st.class.dtype == builder.Undefined {
		return nil, "", fmt.Errorf("unsupported storage type %s", st.class.name)
	}
	es := uint64(st.class.dtype.Size())
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
		if hi != 0 || lo > math.MaxInt64/es {
			return nil, "", fmt.Errorf("size %v is too large", pt.size)
		}
		numel = lo
	}
	nbytes := int64(numel * es) // cannot overflow: checked above
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
		return nil, "", fmt.Errorf("%d bytes of tensor data exceed what a %d-byte checkpoint can reasonably hold", nbytes, fileSize)
	}
	*budget -= nbytes
	data, err := src.storageBytes(st)
	if err != nil {
		return nil, "", err
	}
	// The source checked len(data) == numel(storage)*es, and every element
	// index below is <= last < numel(storage): the products fit.
	if uint64(len(data))/es != uint64(st.numel) {
		return nil, "", fmt.Errorf("storage %q: %d bytes for %d elements of %s", st.key, len(data), st.numel, st.class.name)
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
		start := int64(pt.offset) * int64(es)
		t.Raw = append([]byte(nil), data[start:start+nbytes]...)
		return t, "", nil
	}
	// Gather element by element with an odometer over the indices; pos
	// stays within [offset, last].
	raw := make([]byte, nbytes)
	idx := make([]int, len(pt.size))
	pos := pt.offset
	esi := int(es)
	for out := 0; out < len(raw); out += esi {
		copy(raw[out:out+esi], data[pos*esi:])
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]+1 < pt.size[d] {
				idx[d]++
				pos += pt.stride[d]
				break
			}
			pos -= pt.stride[d] * idx[d]
			idx[d] = 0
		}
	}
	t.Raw = raw
	return t, fmt.Sprintf("tensor %q: made contiguous from stride %v, storage offset %d", key, pt.stride, pt.offset), nil
}

// storageBytes returns the bytes of a storage, reading each zip entry once.
func (a *archive) storageBytes(st *storageRef) ([]byte, error) {
	if b, ok := a.storages[st.key]; ok {
		return b, nil
	}
	name := a.prefix + "data/" + st.key
	f, ok := a.files[name]
	if !ok {
		return nil, fmt.Errorf("storage %q: zip entry %s is missing", st.key, name)
	}
	want, err := storageNBytes(st)
	if err != nil {
		return nil, err
	}
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
