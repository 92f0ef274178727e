package fairseqdata

import "math/bits"

// CollateOrder orders a batch's ids as LanguagePairDataset's collater
// does: src_lengths.sort(descending=True), which on a CPU is torch's
// unstable sort, libstdc++'s std::sort (introsort: median-of-three
// quicksort down to runs of 16, heapsort past 2 log2(n) levels, then
// insertion sort). Equal lengths come out in the order that algorithm
// leaves them, which is fairseq-generate's printing order.
func CollateOrder(batch []int, srcSize func(int) int) {
	e := make([]keyed, len(batch))
	for i, id := range batch {
		e[i] = keyed{srcSize(id), id}
	}
	stdSort(e, func(a, b keyed) bool { return a.key > b.key })
	for i := range e {
		batch[i] = e[i].id
	}
}

type keyed struct{ key, id int }

const sortThreshold = 16

// stdSort is libstdc++'s std::sort of s under less.
func stdSort(s []keyed, less func(a, b keyed) bool) {
	if len(s) < 2 {
		return
	}
	introsortLoop(s, 0, len(s), 2*(bits.Len(uint(len(s)))-1), less)
	finalInsertionSort(s, 0, len(s), less)
}

func introsortLoop(s []keyed, first, last, depth int, less func(a, b keyed) bool) {
	for last-first > sortThreshold {
		if depth == 0 {
			heapSort(s[first:last], less)
			return
		}
		depth--
		cut := partitionPivot(s, first, last, less)
		introsortLoop(s, cut, last, depth, less)
		last = cut
	}
}

func partitionPivot(s []keyed, first, last int, less func(a, b keyed) bool) int {
	mid := first + (last-first)/2
	moveMedianToFirst(s, first, first+1, mid, last-1, less)
	return unguardedPartition(s, first+1, last, first, less)
}

func moveMedianToFirst(s []keyed, result, a, b, c int, less func(a, b keyed) bool) {
	swap := func(i int) { s[result], s[i] = s[i], s[result] }
	switch {
	case less(s[a], s[b]):
		switch {
		case less(s[b], s[c]):
			swap(b)
		case less(s[a], s[c]):
			swap(c)
		default:
			swap(a)
		}
	case less(s[a], s[c]):
		swap(a)
	case less(s[b], s[c]):
		swap(c)
	default:
		swap(b)
	}
}

func unguardedPartition(s []keyed, first, last, pivot int, less func(a, b keyed) bool) int {
	for {
		for less(s[first], s[pivot]) {
			first++
		}
		last--
		for less(s[pivot], s[last]) {
			last--
		}
		if first >= last {
			return first
		}
		s[first], s[last] = s[last], s[first]
		first++
	}
}

func finalInsertionSort(s []keyed, first, last int, less func(a, b keyed) bool) {
	if last-first > sortThreshold {
		insertionSort(s, first, first+sortThreshold, less)
		for i := first + sortThreshold; i < last; i++ {
			unguardedLinearInsert(s, i, less)
		}
		return
	}
	insertionSort(s, first, last, less)
}

func insertionSort(s []keyed, first, last int, less func(a, b keyed) bool) {
	for i := first + 1; i < last; i++ {
		if less(s[i], s[first]) {
			v := s[i]
			copy(s[first+1:i+1], s[first:i])
			s[first] = v
		} else {
			unguardedLinearInsert(s, i, less)
		}
	}
}

func unguardedLinearInsert(s []keyed, last int, less func(a, b keyed) bool) {
	v := s[last]
	next := last - 1
	for less(v, s[next]) {
		s[last] = s[next]
		last = next
		next--
	}
	s[last] = v
}

// heapSort is libstdc++'s std::partial_sort of the whole range: make_heap,
// then pop_heap from the end.
func heapSort(s []keyed, less func(a, b keyed) bool) {
	n := len(s)
	for parent := (n - 2) / 2; ; parent-- {
		adjustHeap(s, parent, n, s[parent], less)
		if parent == 0 {
			break
		}
	}
	for last := n - 1; last > 0; last-- {
		v := s[last]
		s[last] = s[0]
		adjustHeap(s, 0, last, v, less)
	}
}

// adjustHeap is libstdc++'s __adjust_heap: the hole at hole sifted down
// to a leaf by the larger child, then v pushed up from there.
func adjustHeap(s []keyed, hole, n int, v keyed, less func(a, b keyed) bool) {
	top := hole
	child := hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if less(s[child], s[child-1]) {
			child--
		}
		s[hole] = s[child]
		hole = child
	}
	if n%2 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		s[hole] = s[child-1]
		hole = child - 1
	}
	parent := (hole - 1) / 2
	for hole > top && less(s[parent], v) {
		s[hole] = s[parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	s[hole] = v
}
