package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/nlpodyssey/gopickle/types"
)

// The legacy format is what torch.save wrote before PyTorch 1.6 (and still
// writes with _use_new_zipfile_serialization=False): five pickles back to
// back, then the storages' bytes.
//
//  1. the magic number 0x1950a86a20f9469cfc6c (a LONG)
//  2. the protocol version, 1001
//  3. system info: a dict with little_endian, protocol_version, type_sizes
//  4. the object, whose storages are persistent ids
//     ('storage', storage type, key, location, numel, view metadata) and
//     whose nn.Module subclasses are ('module', class, source file, source)
//  5. the list of storage keys, in the order their bytes follow
//
// Each storage then follows as a little-endian int64 element count and
// count*element-size bytes.

var legacyMagicNumber, _ = new(big.Int).SetString("1950a86a20f9469cfc6c", 16)

const legacyProtocol = 1001

// legacyFile reads storages from their offsets in the file.
type legacyFile struct {
	r        io.ReaderAt
	size     int64
	refs     map[string]*storageRef
	offsets  map[string]int64 // key -> offset of the storage's bytes
	storages map[string][]byte
}

// ReadPyTorchLegacy reads a checkpoint of size bytes from r in torch.save's
// legacy (pre-1.6, non-zip) format. The tensors are found as in ReadPyTorch.
// Errors do not name the file; Load and LoadPyTorch add it.
func ReadPyTorchLegacy(r io.ReaderAt, size int64) (*StateDict, error) {
	sd, err := readLegacy(r, size)
	if err != nil {
		return nil, fmt.Errorf("pytorch legacy format: %w", err)
	}
	return sd, nil
}

func readLegacy(r io.ReaderAt, size int64) (*StateDict, error) {
	l := &legacyFile{r: r, size: size, offsets: map[string]int64{}, storages: map[string][]byte{}}
	var off int64
	next := func(what string, u *unpickler) (any, error) {
		pkl, err := l.pickleAt(off, what)
		if err != nil {
			return nil, err
		}
		off += int64(len(pkl))
		v, err := u.load(pkl)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return v, nil
	}
	magic, err := next("magic number", newUnpickler(true))
	if err != nil {
		return nil, err
	}
	if m, ok := magic.(*big.Int); !ok || m.Cmp(legacyMagicNumber) != 0 {
		return nil, fmt.Errorf("magic number is %s, want 0x1950a86a20f9469cfc6c: not a torch.save file", describe(magic))
	}
	proto, err := next("protocol version", newUnpickler(true))
	if err != nil {
		return nil, err
	}
	if p, ok := proto.(int); !ok || p != legacyProtocol {
		return nil, fmt.Errorf("protocol version is %v, want %d", proto, legacyProtocol)
	}
	info, err := next("system info", newUnpickler(true))
	if err != nil {
		return nil, err
	}
	if err := checkSysInfo(info); err != nil {
		return nil, err
	}
	u := newUnpickler(true)
	obj, err := next("object", u)
	if err != nil {
		return nil, err
	}
	l.refs = u.refs
	keys, err := next("storage key list", newUnpickler(true))
	if err != nil {
		return nil, err
	}
	list, ok := keys.(*types.List)
	if !ok {
		return nil, fmt.Errorf("storage key list is %s, want a list", describe(keys))
	}
	for i, k := range *list {
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("storage key %d is %s, want a string", i, describe(k))
		}
		if err := l.locate(key, &off); err != nil {
			return nil, err
		}
	}
	sd, err := buildStateDict(obj, l, size, FormatPyTorchLegacy)
	if err != nil {
		return nil, err
	}
	if off < size {
		sd.Notes = append(sd.Notes, fmt.Sprintf("%d bytes after the last storage ignored", size-off))
	}
	return sd, nil
}

func checkSysInfo(info any) error {
	entries, ok := dictEntries(info)
	if !ok {
		return fmt.Errorf("system info is %s, want a dict", describe(info))
	}
	for _, e := range entries {
		if k, _ := e.Key.(string); k == "little_endian" {
			if le, ok := e.Value.(bool); !ok || !le {
				return errors.New("written on a big-endian machine: not supported (want little-endian)")
			}
			return nil
		}
	}
	return errors.New("system info has no little_endian entry")
}

// pickleAt returns the pickle starting at off, reading a growing window so
// that a small file is read once and a large one only up to its storages.
func (l *legacyFile) pickleAt(off int64, what string) ([]byte, error) {
	win := int64(64 << 10)
	for {
		n := min(win, l.size-off, maxPickleSize)
		if n <= 0 {
			return nil, fmt.Errorf("%s: the file ends at byte %d, before it (truncated?)", what, off)
		}
		buf := make([]byte, n)
		if _, err := l.r.ReadAt(buf, off); err != nil {
			return nil, fmt.Errorf("%s: reading at byte %d: %w", what, off, err)
		}
		end, err := scanPickle(buf)
		if err == nil {
			return buf[:end], nil
		}
		if errors.Is(err, errPickleEnds) && n < l.size-off && n < maxPickleSize {
			win *= 4
			continue
		}
		return nil, fmt.Errorf("%s at byte %d: %w", what, off, err)
	}
}

// locate records where storage key's bytes are and moves *off past them.
func (l *legacyFile) locate(key string, off *int64) error {
	if _, dup := l.offsets[key]; dup {
		return fmt.Errorf("storage %q is listed twice", key)
	}
	ref, ok := l.refs[key]
	if !ok {
		return fmt.Errorf("storage %q is listed but the object never uses it, so its element size is unknown", key)
	}
	if l.size-*off < 8 {
		return fmt.Errorf("storage %q: the file ends at byte %d, before its element count (truncated?)", key, l.size)
	}
	var head [8]byte
	if _, err := l.r.ReadAt(head[:], *off); err != nil {
		return fmt.Errorf("storage %q: reading its element count: %w", key, err)
	}
	count := int64(binary.LittleEndian.Uint64(head[:]))
	if count != int64(ref.numel) {
		return fmt.Errorf("storage %q: the file holds %d elements, the object says %d", key, count, ref.numel)
	}
	nbytes, err := storageNBytes(ref)
	if err != nil {
		return err
	}
	*off += 8
	if nbytes > uint64(l.size-*off) {
		return fmt.Errorf("storage %q: %s of %d elements needs %d bytes at byte %d of a %d-byte file (truncated?)", key, ref.class.name, ref.numel, nbytes, *off, l.size)
	}
	l.offsets[key] = *off
	*off += int64(nbytes)
	return nil
}

func (l *legacyFile) storageBytes(st *storageRef) ([]byte, error) {
	if st.base != nil {
		b, err := l.storageBytes(st.base)
		if err != nil {
			return nil, err
		}
		es := st.class.dtype.Size() // a view's offset and size were checked against its base's numel
		return b[st.at*es : (st.at+st.numel)*es], nil
	}
	if b, ok := l.storages[st.key]; ok {
		return b, nil
	}
	off, ok := l.offsets[st.key]
	if !ok {
		return nil, fmt.Errorf("storage %q is not in the file's storage key list", st.key)
	}
	n, err := storageNBytes(st)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n) // locate checked n against the file size
	if _, err := l.r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("storage %q: reading %d bytes at byte %d: %w", st.key, n, off, err)
	}
	l.storages[st.key] = b
	return b, nil
}
