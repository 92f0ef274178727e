package decode

// relayout moves per-row data in place, between two batch layouts of
// slot-major rows: buf holds slot j's data at [j*oldLen, (j+1)*oldLen) for
// j < len(oldRow) before, and at [j*newLen, (j+1)*newLen) for j <
// len(newRow) after. Every slot of one row holds the same data (the row's
// encoder outputs), so a new slot takes its data from any old slot of its
// row: src[j] is one (newRow[j] == oldRow[src[j]]). When newLen > oldLen the
// tail of each new slot is zeroed; when it is smaller the data is cut.
//
// Rows must keep their order and their slots stay together in both layouts
// (row ids non-decreasing along the slots), as the executor guarantees.
// Nothing is moved for a slot that already holds its row's data (same
// stride, same row in the old layout): a beam reordering its hypotheses
// within a row costs no copy, and rows that only shift by the room finished
// rows left are copied once.
//
// The moves cannot clobber a source still to be read: each row's data is
// written only inside its own new territory (its new slots) and read from
// inside its old one; rows moving to higher offsets are handled from the last
// to the first, then the others from the first to the last, as memmove does
// for one block.
func relayout(buf []float32, oldRow []RowID, oldLen int, newRow []RowID, src []int, newLen int) {
	cp := min(oldLen, newLen)
	type group struct {
		j0, j1 int // new slots [j0, j1)
		base   int // a new slot already holding the data, or -1
		from   int // old slot to read from when base < 0
	}
	inPlace := func(y int, r RowID) bool {
		return oldLen == newLen && y < len(oldRow) && oldRow[y] == r
	}
	// Groups are found on the fly twice (backward, then forward) so that no
	// slice of groups is allocated.
	move := func(g group) {
		r := newRow[g.j0]
		base := g.base
		if base < 0 {
			d, s := g.j0*newLen, g.from*oldLen
			copy(buf[d:d+cp], buf[s:s+cp])
			clear(buf[d+cp : d+newLen])
			base = g.j0
		}
		b := buf[base*newLen : (base+1)*newLen]
		for y := g.j0; y < g.j1; y++ {
			if y != base && !inPlace(y, r) {
				copy(buf[y*newLen:(y+1)*newLen], b)
			}
		}
	}
	groupAt := func(j0 int) group {
		r := newRow[j0]
		j1 := j0 + 1
		for j1 < len(newRow) && newRow[j1] == r {
			j1++
		}
		g := group{j0: j0, j1: j1, base: -1, from: src[j0]}
		for y := j0; y < j1; y++ {
			if inPlace(y, r) {
				g.base = y
				break
			}
		}
		return g
	}
	right := func(g group) bool { return g.base < 0 && g.j0*newLen > g.from*oldLen }

	// Pass 1: rows moving to higher offsets, last first.
	for j1 := len(newRow); j1 > 0; {
		j0 := j1 - 1
		for j0 > 0 && newRow[j0-1] == newRow[j1-1] {
			j0--
		}
		if g := groupAt(j0); right(g) {
			move(g)
		}
		j1 = j0
	}
	// Pass 2: the others, first first.
	for j0 := 0; j0 < len(newRow); {
		g := groupAt(j0)
		if !right(g) {
			move(g)
		}
		j0 = g.j1
	}
}
