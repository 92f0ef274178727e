package decode

import "math/bits"

// torchTopK is torch.topk(k, largest=True, sorted=True) of one row on the
// CPU as PyTorch 1.x computes it (aten's topk_impl_loop), ties included:
// the (value, index) pairs go through libstdc++'s std::partial_sort when
// k * 64 <= n, else std::nth_element at k-1 followed by std::sort of the
// first k-1, all under the comparator "x is NaN and y is not, or x > y".
// Equal values thus come out in the order those algorithms leave them,
// not in index order: what beam_search and greedy_search see in GNMT's
// generate. It reorders q in place and returns its first k entries.
func torchTopK(q []topkElem, k int) []topkElem {
	n := len(q)
	if k <= 0 || n == 0 {
		return q[:0]
	}
	k = min(k, n)
	if k*64 <= n {
		heapSelect(q, k)
		sortHeap(q[:k])
		return q[:k]
	}
	introselect(q, 0, k-1, n, 2*lg(n))
	introsort(q[:k-1])
	return q[:k]
}

// topkElem is one entry of the row: its value and index.
type topkElem struct {
	v float32
	i int
}

// topkGreater is aten's comparator for largest=True.
func topkGreater(x, y topkElem) bool {
	xn, yn := x.v != x.v, y.v != y.v
	return xn && !yn || x.v > y.v
}

func lg(n int) int { return bits.Len(uint(n)) - 1 }

// introselect is libstdc++'s std::__introselect over q[first:last].
func introselect(q []topkElem, first, nth, last, depth int) {
	for last-first > 3 {
		if depth == 0 {
			heapSelect(q[first:last], nth+1-first)
			q[first], q[nth] = q[nth], q[first]
			return
		}
		depth--
		cut := partitionPivot(q, first, last)
		if cut <= nth {
			first = cut
		} else {
			last = cut
		}
	}
	insertionSort(q[first:last])
}

// introsort is libstdc++'s std::sort: __introsort_loop with the threshold
// 16, then __final_insertion_sort.
func introsort(q []topkElem) {
	if len(q) < 2 {
		return
	}
	introsortLoop(q, 0, len(q), 2*lg(len(q)))
	if len(q) > 16 {
		insertionSort(q[:16])
		for i := 16; i < len(q); i++ {
			linearInsert(q, i)
		}
		return
	}
	insertionSort(q)
}

func introsortLoop(q []topkElem, first, last, depth int) {
	for last-first > 16 {
		if depth == 0 {
			heapSelect(q[first:last], last-first)
			sortHeap(q[first:last])
			return
		}
		depth--
		cut := partitionPivot(q, first, last)
		introsortLoop(q, cut, last, depth)
		last = cut
	}
}

// partitionPivot is std::__unguarded_partition_pivot: the median of
// q[first+1], the middle and q[last-1] moved to first, then the
// unguarded partition of the rest around it.
func partitionPivot(q []topkElem, first, last int) int {
	mid := first + (last-first)/2
	moveMedianToFirst(q, first, first+1, mid, last-1)
	lo, hi := first+1, last
	for {
		for topkGreater(q[lo], q[first]) {
			lo++
		}
		hi--
		for topkGreater(q[first], q[hi]) {
			hi--
		}
		if lo >= hi {
			return lo
		}
		q[lo], q[hi] = q[hi], q[lo]
		lo++
	}
}

func moveMedianToFirst(q []topkElem, result, a, b, c int) {
	less := func(i, j int) bool { return topkGreater(q[i], q[j]) }
	var m int
	switch {
	case less(a, b):
		switch {
		case less(b, c):
			m = b
		case less(a, c):
			m = c
		default:
			m = a
		}
	case less(a, c):
		m = a
	case less(b, c):
		m = c
	default:
		m = b
	}
	q[result], q[m] = q[m], q[result]
}

// insertionSort is std::__insertion_sort.
func insertionSort(q []topkElem) {
	for i := 1; i < len(q); i++ {
		if topkGreater(q[i], q[0]) {
			v := q[i]
			copy(q[1:i+1], q[:i])
			q[0] = v
			continue
		}
		linearInsert(q, i)
	}
}

// linearInsert is std::__unguarded_linear_insert of q[i].
func linearInsert(q []topkElem, i int) {
	v := q[i]
	j := i - 1
	for topkGreater(v, q[j]) {
		q[j+1] = q[j]
		j--
	}
	q[j+1] = v
}

// heapSelect is std::__heap_select(first, first+k, last): q[:k] a heap
// of the k first entries under the comparator.
func heapSelect(q []topkElem, k int) {
	makeHeap(q[:k])
	for i := k; i < len(q); i++ {
		if topkGreater(q[i], q[0]) {
			v := q[i]
			q[i] = q[0]
			adjustHeap(q[:k], 0, v)
		}
	}
}

func makeHeap(q []topkElem) {
	n := len(q)
	if n < 2 {
		return
	}
	for parent := (n - 2) / 2; ; parent-- {
		adjustHeap(q, parent, q[parent])
		if parent == 0 {
			return
		}
	}
}

// sortHeap is std::__sort_heap.
func sortHeap(q []topkElem) {
	for last := len(q); last > 1; {
		last--
		v := q[last]
		q[last] = q[0]
		adjustHeap(q[:last], 0, v)
	}
}

// adjustHeap is std::__adjust_heap then std::__push_heap.
func adjustHeap(q []topkElem, hole int, v topkElem) {
	n := len(q)
	top, child := hole, hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if topkGreater(q[child], q[child-1]) {
			child--
		}
		q[hole] = q[child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		q[hole] = q[child-1]
		hole = child - 1
	}
	for parent := (hole - 1) / 2; hole > top && topkGreater(q[parent], v); parent = (hole - 1) / 2 {
		q[hole] = q[parent]
		hole = parent
	}
	q[hole] = v
}
