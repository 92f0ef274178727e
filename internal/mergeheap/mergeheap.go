// Package mergeheap is the BPE tokenizers' queue of candidate merges
// (package subword's SentencePiece and subword-nmt BPE, package onmttok's
// BPE): the pairs of adjacent symbols whose merge is known, best first,
// so that a word of n symbols merges in O(n log n) instead of rescanning
// every pair after each merge.
package mergeheap

// Pair is a candidate merge of two adjacent symbols: their indexes in
// the caller's symbols (in the word's order), the merge's score (higher
// merges first: a rank r is queued as -r), and the bytes the merged
// symbol spans, by which the caller tells a pair that has since grown.
type Pair struct {
	Left, Right int
	Score       float64
	Size        int
}

// Heap holds candidate merges: highest score first, then the leftmost
// (lowest Left). The zero value is an empty heap.
type Heap struct{ items []Pair }

// Len is the number of pairs queued.
func (h *Heap) Len() int { return len(h.items) }

// Top is the next pair Pop returns; the heap must not be empty.
func (h *Heap) Top() Pair { return h.items[0] }

// before reports whether a comes out before b.
func before(a, b Pair) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Left < b.Left)
}

// Push queues a pair.
func (h *Heap) Push(p Pair) {
	h.items = append(h.items, p)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !before(h.items[i], h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

// Pop removes and returns the best pair; the heap must not be empty.
func (h *Heap) Pop() Pair {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.items) && before(h.items[l], h.items[m]) {
			m = l
		}
		if r < len(h.items) && before(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
