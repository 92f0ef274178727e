package fairseqdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The dataset formats (--dataset-impl). Lazy and cached are one format on
// disk (TNTIDX), read differently by fairseq; the ids are the same.
const (
	ImplMMap   = "mmap"
	ImplLazy   = "lazy"
	ImplCached = "cached"
	ImplRaw    = "raw"
)

// Impls are the formats Open reads, as --dataset-impl names them.
var Impls = []string{ImplRaw, ImplLazy, ImplCached, ImplMMap}

var (
	mmapMagic = []byte("MMIDIDX\x00\x00")
	tntMagic  = []byte("TNTIDX\x00\x00")
)

// dtype is an element type of an indexed dataset, by its header code
// (indexed_dataset._code_to_dtype).
type dtype struct {
	name  string
	size  int
	float bool
}

var dtypes = map[uint64]dtype{
	1: {"uint8", 1, false}, 2: {"int8", 1, false}, 3: {"int16", 2, false}, 4: {"int32", 4, false},
	5: {"int64", 8, false}, 6: {"float64", 8, true}, 7: {"double", 8, true}, 8: {"uint16", 2, false},
	9: {"uint32", 4, false}, 10: {"uint64", 8, false},
}

// decode reads element k of b (little-endian) as an id.
func (t dtype) decode(b []byte, code uint64) int64 {
	switch code {
	case 1:
		return int64(b[0])
	case 2:
		return int64(int8(b[0]))
	case 3:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	case 5, 10:
		return int64(binary.LittleEndian.Uint64(b))
	case 8:
		return int64(binary.LittleEndian.Uint16(b))
	case 9:
		return int64(binary.LittleEndian.Uint32(b))
	}
	return 0
}

// Dataset is one side of a split: its sentences' ids, each ending in </s>
// as fairseq-preprocess wrote them (or, for raw text, as fairseq encodes
// the lines).
type Dataset struct {
	// Path is the prefix the files were read from (SPLIT.SRC-TGT.LANG).
	Path string
	// Impl is the format read: mmap, lazy (TNTIDX) or raw.
	Impl  string
	items [][]int64
}

// Len is the number of sentences.
func (d *Dataset) Len() int { return len(d.items) }

// Size is the number of ids of sentence i (its </s> included).
func (d *Dataset) Size(i int) int { return len(d.items[i]) }

// Item is sentence i's ids.
func (d *Dataset) Item(i int) []int64 { return d.items[i] }

// Sizes are every sentence's Size.
func (d *Dataset) Sizes() []int {
	out := make([]int, len(d.items))
	for i, it := range d.items {
		out[i] = len(it)
	}
	return out
}

// Exists reports whether prefix has a dataset of impl ("" for any) on
// disk, as fairseq's dataset_exists checks (raw: the text file; the
// others: .idx and .bin).
func Exists(prefix, impl string) bool {
	if impl == ImplRaw || impl == "" {
		if fileExists(prefix) {
			return true
		}
		if impl == ImplRaw {
			return false
		}
	}
	return fileExists(prefix+".idx") && fileExists(prefix+".bin")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// InferImpl tells a dataset's format as fairseq's infer_dataset_impl
// does when --dataset-impl is not given: raw when the text file is there,
// else by the .idx file's magic (TNTIDX: cached, MMIDIDX: mmap).
func InferImpl(prefix string) (string, error) {
	if fileExists(prefix) {
		return ImplRaw, nil
	}
	if !Exists(prefix, ImplMMap) {
		return "", fmt.Errorf("fairseqdata: %s: no dataset: neither the text file (raw) nor %s.idx and %s.bin", prefix, prefix, prefix)
	}
	head := make([]byte, 8)
	f, err := os.Open(prefix + ".idx")
	if err != nil {
		return "", fmt.Errorf("fairseqdata: %w", err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, head); err != nil {
		return "", fmt.Errorf("fairseqdata: %s.idx: %d bytes: too short for an index (expected the magic MMIDIDX or TNTIDX)", prefix, fileSize(prefix+".idx"))
	}
	switch {
	case bytes.Equal(head, tntMagic):
		return ImplCached, nil
	case bytes.Equal(head, mmapMagic[:8]):
		return ImplMMap, nil
	}
	return "", fmt.Errorf("fairseqdata: %s.idx begins %q: not an index fairseq-preprocess writes (expected the magic MMIDIDX for mmap or TNTIDX for lazy/cached)", prefix, head)
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// Open reads the dataset at prefix in format impl ("" infers it as
// fairseq does; InferImpl). dict encodes raw text and bounds the ids of
// the others: an id outside it is an error naming the sentence.
func Open(prefix, impl string, dict *Dictionary) (*Dataset, error) {
	if impl == "" {
		var err error
		if impl, err = InferImpl(prefix); err != nil {
			return nil, err
		}
	}
	var (
		items [][]int64
		err   error
	)
	switch impl {
	case ImplRaw:
		items, err = readRaw(prefix, dict)
	case ImplMMap:
		items, err = readMMap(prefix)
	case ImplLazy, ImplCached:
		items, err = readTNT(prefix)
	default:
		return nil, fmt.Errorf("fairseqdata: --dataset-impl %q: expected one of %s", impl, strings.Join(Impls, ", "))
	}
	if err != nil {
		return nil, err
	}
	if impl != ImplRaw && dict != nil {
		for i, it := range items {
			for j, id := range it {
				if id < 0 || id >= int64(dict.Len()) {
					return nil, fmt.Errorf("fairseqdata: %s.bin: sentence %d, token %d: id %d is outside the dictionary's %d symbols (was it binarized with another dictionary?)", prefix, i, j, id, dict.Len())
				}
			}
		}
	}
	return &Dataset{Path: prefix, Impl: impl, items: items}, nil
}

// readRaw reads a raw text dataset as IndexedRawTextDataset does: each
// line (Python's universal newlines: \n, \r\n or \r end one) encoded with
// dict, </s> appended.
func readRaw(path string, dict *Dictionary) ([][]int64, error) {
	if dict == nil {
		return nil, fmt.Errorf("fairseqdata: %s: a raw text dataset needs its dictionary", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fairseqdata: %w", err)
	}
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	text = strings.TrimSuffix(text, "\n")
	if text == "" && len(data) == 0 {
		return nil, nil
	}
	var items [][]int64
	for _, line := range strings.Split(text, "\n") {
		items = append(items, dict.Encode(line, false, true))
	}
	return items, nil
}

// indexReader reads little-endian fields of an index file, naming the
// file and the field when it ends early.
type indexReader struct {
	path string
	b    []byte
	off  int
	err  error
}

func (r *indexReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = fmt.Errorf("fairseqdata: %s: %d bytes: it ends inside %s (at byte %d, %d more wanted): truncated or not an index", r.path, len(r.b), what, r.off, n)
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *indexReader) u64(what string) uint64 {
	b := r.take(8, what)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// count reads a count that must fit what is left of the file at per bytes
// each.
func (r *indexReader) count(what string, per int) int {
	n := r.u64(what)
	if r.err == nil && n > uint64(len(r.b)-r.off)/uint64(per) {
		r.err = fmt.Errorf("fairseqdata: %s: %s is %d, more than the %d bytes left hold: truncated or not an index", r.path, what, n, len(r.b)-r.off)
		return 0
	}
	return int(n)
}

// readMMap reads an MMapIndexedDataset: the index (magic, version 1, the
// dtype code, the count, int32 sizes, int64 byte pointers) and each
// sentence's elements at its pointer in the .bin file.
func readMMap(prefix string) ([][]int64, error) {
	idx, bin, err := readPair(prefix)
	if err != nil {
		return nil, err
	}
	r := &indexReader{path: prefix + ".idx", b: idx}
	if magic := r.take(len(mmapMagic), "the magic"); magic != nil && !bytes.Equal(magic, mmapMagic) {
		return nil, fmt.Errorf("fairseqdata: %s.idx begins %q, not the mmap index's magic %q (is it another --dataset-impl?)", prefix, magic, mmapMagic)
	}
	if v := r.u64("the version"); r.err == nil && v != 1 {
		return nil, fmt.Errorf("fairseqdata: %s.idx: version %d (fairseq writes and reads version 1)", prefix, v)
	}
	codeB := r.take(1, "the dtype code")
	if r.err != nil {
		return nil, r.err
	}
	code := uint64(codeB[0])
	t, err := elementType(prefix, code)
	if err != nil {
		return nil, err
	}
	n := r.count("the number of sentences", 12)
	sizes := r.take(4*n, "the sizes")
	ptrs := r.take(8*n, "the pointers")
	if r.err != nil {
		return nil, r.err
	}
	items := make([][]int64, n)
	for i := range items {
		size := int64(int32(binary.LittleEndian.Uint32(sizes[4*i:])))
		ptr := int64(binary.LittleEndian.Uint64(ptrs[8*i:]))
		if size < 0 || ptr < 0 || ptr > int64(len(bin)) || size > (int64(len(bin))-ptr)/int64(t.size) {
			return nil, fmt.Errorf("fairseqdata: %s.idx: sentence %d has %d elements at byte %d, past the end of %s.bin (%d bytes): the files do not belong together", prefix, i, size, ptr, prefix, len(bin))
		}
		items[i] = decodeAll(t, code, bin[ptr:ptr+size*int64(t.size)], 0)
	}
	return items, nil
}

// readTNT reads an IndexedDataset (TNTIDX; lazy and cached): magic,
// version 1, dtype code and element size, the count and the number of
// sizes, dimension offsets, element offsets and the sizes (int64 each);
// the elements are stored one above fairseq's ids (for Lua), and fairseq
// reads them back one less.
func readTNT(prefix string) ([][]int64, error) {
	idx, bin, err := readPair(prefix)
	if err != nil {
		return nil, err
	}
	r := &indexReader{path: prefix + ".idx", b: idx}
	if magic := r.take(len(tntMagic), "the magic"); magic != nil && !bytes.Equal(magic, tntMagic) {
		return nil, fmt.Errorf("fairseqdata: %s.idx begins %q, not the lazy/cached index's magic %q (is it another --dataset-impl?)", prefix, magic, tntMagic)
	}
	if v := r.u64("the version"); r.err == nil && v != 1 {
		return nil, fmt.Errorf("fairseqdata: %s.idx: version %d (fairseq writes and reads version 1)", prefix, v)
	}
	code := r.u64("the dtype code")
	elem := r.u64("the element size")
	n := r.count("the number of sentences", 16)
	s := r.count("the number of sizes", 8)
	dims := r.take(8*(n+1), "the dimension offsets")
	offs := r.take(8*(n+1), "the data offsets")
	sizes := r.take(8*s, "the sizes")
	if r.err != nil {
		return nil, r.err
	}
	t, err := elementType(prefix, code)
	if err != nil {
		return nil, err
	}
	if elem != uint64(t.size) {
		return nil, fmt.Errorf("fairseqdata: %s.idx: element size %d for dtype %s (expected %d)", prefix, elem, t.name, t.size)
	}
	at := func(b []byte, i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }
	items := make([][]int64, n)
	for i := range items {
		d0, d1 := at(dims, i), at(dims, i+1)
		if d1 != d0+1 || d0 < 0 || d0 >= int64(s) {
			return nil, fmt.Errorf("fairseqdata: %s.idx: sentence %d has %d dimensions (offsets %d to %d of %d sizes): a sentence is one row of ids", prefix, i, d1-d0, d0, d1, s)
		}
		size := at(sizes, int(d0))
		o0, o1 := at(offs, i), at(offs, i+1)
		if o0 < 0 || o1-o0 != size || o1 > int64(len(bin))/int64(t.size) {
			return nil, fmt.Errorf("fairseqdata: %s.idx: sentence %d: elements %d to %d for size %d, in %s.bin of %d elements: the files do not belong together", prefix, i, o0, o1, size, prefix, int64(len(bin))/int64(t.size))
		}
		items[i] = decodeAll(t, code, bin[o0*int64(t.size):o1*int64(t.size)], 1)
	}
	return items, nil
}

func readPair(prefix string) (idx, bin []byte, err error) {
	if idx, err = os.ReadFile(prefix + ".idx"); err != nil {
		return nil, nil, fmt.Errorf("fairseqdata: %w", err)
	}
	if bin, err = os.ReadFile(prefix + ".bin"); err != nil {
		return nil, nil, fmt.Errorf("fairseqdata: %w", err)
	}
	return idx, bin, nil
}

func elementType(prefix string, code uint64) (dtype, error) {
	t, ok := dtypes[code]
	if !ok {
		return dtype{}, fmt.Errorf("fairseqdata: %s.idx: dtype code %d is none of fairseq's (1 to 10)", prefix, code)
	}
	if t.float {
		return dtype{}, fmt.Errorf("fairseqdata: %s.idx: dtype %s: the dataset holds floats, not token ids", prefix, t.name)
	}
	return t, nil
}

// decodeAll reads b's elements as ids, less minus.
func decodeAll(t dtype, code uint64, b []byte, minus int64) []int64 {
	out := make([]int64, len(b)/t.size)
	for k := range out {
		out[k] = t.decode(b[k*t.size:], code) - minus
	}
	return out
}

// ErrNoSplit is wrapped by OpenPair's error when the split is not in the
// directory.
var ErrNoSplit = errors.New("no such split")
