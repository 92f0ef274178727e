package shard

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// DefaultMaxHeld is how many bytes of written-out results a shard holds
// in memory, by default, while they wait for the sentences before them
// (TranslateOptions.MaxHeldBytes); past it they wait in a spill file.
const DefaultMaxHeld = 8 << 20

// orderer writes the sentences of a part in the file's order as they
// arrive in any order (a test set is decoded longest first): sentence i's
// bytes are written as soon as every sentence before it is, and until
// then held, in memory up to maxHeld bytes in all and past that in a
// spill file beside the part, which is removed as soon as it is made so
// that a killed process leaves nothing of it (on NFS a .nfsXXXX file,
// gone once the process is). What it keeps per sentence is a span of
// the spill file, 16 bytes.
type orderer struct {
	w       io.Writer
	n, next int
	maxHeld int64
	written func(i int)

	held      map[int][]byte
	heldBytes int64
	peakHeld  int64

	dir      string
	spill    *os.File
	spillEnd int64
	spans    []span // spans[i]: sentence i's bytes in the spill file, when spilled
	spilled  int
	buf      []byte
}

// span is a sentence's bytes in the spill file; size -1: not spilled.
type span struct {
	off  int64
	size int64
}

func newOrderer(w io.Writer, n int, maxHeld int64, dir string, written func(i int)) *orderer {
	return &orderer{w: w, n: n, maxHeld: maxHeld, dir: dir, written: written, held: map[int][]byte{}}
}

// put takes sentence i's bytes (which it copies, when it keeps them).
func (o *orderer) put(i int, b []byte) error {
	switch {
	case i < o.next || i >= o.n || o.held[i] != nil || o.spans != nil && o.spans[i].size >= 0:
		return fmt.Errorf("sentence %d of %d written twice or out of range", i+1, o.n)
	case i == o.next:
		if err := o.write(i, b); err != nil {
			return err
		}
		return o.drain()
	case o.heldBytes+int64(len(b)) <= o.maxHeld:
		o.held[i] = append(make([]byte, 0, max(len(b), 1)), b...)
		o.heldBytes += int64(len(b))
		o.peakHeld = max(o.peakHeld, o.heldBytes)
		return nil
	}
	return o.toSpill(i, b)
}

func (o *orderer) write(i int, b []byte) error {
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	o.next = i + 1
	if o.written != nil {
		o.written(i)
	}
	return nil
}

// drain writes the held sentences that are next.
func (o *orderer) drain() error {
	for o.next < o.n {
		i := o.next
		if b, ok := o.held[i]; ok {
			delete(o.held, i)
			o.heldBytes -= int64(len(b))
			if err := o.write(i, b); err != nil {
				return err
			}
			continue
		}
		if o.spans == nil || o.spans[i].size < 0 {
			return nil
		}
		sp := o.spans[i]
		if int64(cap(o.buf)) < sp.size {
			o.buf = make([]byte, sp.size)
		}
		b := o.buf[:sp.size]
		if _, err := o.spill.ReadAt(b, sp.off); err != nil {
			return fmt.Errorf("reading back sentence %d from the shard's spill file: %w", i+1, err)
		}
		o.spans[i].size = -1
		if err := o.write(i, b); err != nil {
			return err
		}
	}
	return nil
}

func (o *orderer) toSpill(i int, b []byte) error {
	if o.spill == nil {
		f, err := os.CreateTemp(o.dir, ".attnx-spill-*")
		if err != nil {
			return fmt.Errorf("making a spill file for the sentences waiting for those before them: %w", err)
		}
		// Unlinked at once: the file lives while it is open, and a killed
		// process leaves nothing to clean up.
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return fmt.Errorf("spill file: %w", err)
		}
		o.spill = f
		o.spans = make([]span, o.n)
		for k := range o.spans {
			o.spans[k].size = -1
		}
	}
	if _, err := o.spill.WriteAt(b, o.spillEnd); err != nil {
		return fmt.Errorf("writing to the shard's spill file in %s: %w", filepath.Clean(o.dir), err)
	}
	o.spans[i] = span{off: o.spillEnd, size: int64(len(b))}
	o.spillEnd += int64(len(b))
	o.spilled++
	return nil
}

// finish checks that every sentence was written and closes the spill file.
func (o *orderer) finish() error {
	err := o.close()
	if err == nil && o.next != o.n {
		err = fmt.Errorf("sentence %d of %d never came", o.next+1, o.n)
	}
	return err
}

func (o *orderer) close() error {
	if o.spill == nil {
		return nil
	}
	err := o.spill.Close()
	o.spill = nil
	return err
}
