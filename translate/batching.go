package translate

import (
	"sort"

	"github.com/attnx/attnx/modeldir"
)

// openNMTBucket is how many sentences onmt_translate reads before it sorts
// them by length (onmt/inputters/dynamic_iterator.py, inference's bucket).
const openNMTBucket = 16384

// batchLongest returns, for each row of a test set, the longest source of
// the batch the toolkit's translate command puts it in when it batches the
// set as b says: the n of the toolkit's per-batch output limit
// (modeldir.Defaults.Batching). Blank rows (nil) are in no batch and get 0.
func batchLongest(rows [][]int64, b *modeldir.Batching) []int {
	out := make([]int, len(rows))
	for _, batch := range toolkitBatches(rows, b) {
		longest := 0
		for _, i := range batch {
			longest = max(longest, len(rows[i]))
		}
		for _, i := range batch {
			out[i] = longest
		}
	}
	return out
}

// toolkitBatches returns the batches (row indices) the toolkit's
// translate command cuts a test set into when it batches it as b says;
// blank rows (nil) are in none.
func toolkitBatches(rows [][]int64, b *modeldir.Batching) [][]int {
	var order []int
	for i, r := range rows {
		if r != nil {
			order = append(order, i)
		}
	}
	var batches [][]int
	switch b.Style {
	case modeldir.BatchingOpenNMT:
		for start := 0; start < len(order); start += openNMTBucket {
			bucket := append([]int(nil), order[start:min(start+openNMTBucket, len(order))]...)
			sort.SliceStable(bucket, func(x, y int) bool { return len(rows[bucket[x]]) < len(rows[bucket[y]]) })
			batches = append(batches, openNMTBatches(rows, bucket, b)...)
		}
	default: // modeldir.BatchingJoeyNMT
		batches = joeyBatches(rows, order, b)
	}
	return batches
}

// openNMTBatches cuts sorted rows as OpenNMT-py 3.5.1's batch_iter does at
// inference: a batch closes when its size (sentences, or sentences x
// longest source with Tokens) reaches b.Size; when it went over, its last
// sentence starts the next batch instead, unless that sentence is the only
// one, which then waits for the next to be cut off alone.
func openNMTBatches(rows [][]int64, sorted []int, b *modeldir.Batching) [][]int {
	var out [][]int
	var cur []int
	longest := 0
	size := func() int {
		if b.Tokens {
			return len(cur) * longest
		}
		return len(cur)
	}
	for _, i := range sorted {
		cur = append(cur, i)
		longest = max(longest, len(rows[i]))
		if size() < b.Size {
			continue
		}
		switch {
		case size() == b.Size:
			out, cur, longest = append(out, cur), nil, 0
		case len(cur) > 1:
			last := cur[len(cur)-1]
			out = append(out, cur[:len(cur)-1])
			cur, longest = []int{last}, len(rows[last])
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// joeyBatches cuts rows in file order as JoeyNMT 2.3's batch samplers do:
// b.Size sentences, or with Tokens until sentences x longest source (</s>
// included) reaches b.Size.
func joeyBatches(rows [][]int64, order []int, b *modeldir.Batching) [][]int {
	var out [][]int
	var cur []int
	longest := 0
	for _, i := range order {
		cur = append(cur, i)
		longest = max(longest, len(rows[i]))
		n := len(cur)
		if b.Tokens {
			n *= longest
		}
		if n >= b.Size {
			out, cur, longest = append(out, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
