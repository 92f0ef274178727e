package serve

import (
	"fmt"
	"github.com/attnx/attnx/internal/idlemem"
	"sync/atomic"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/translate"
)

// The memory budgets. A request's memory is not bounded by any one of its
// limits (inputs, source length, max_len, beam) but by their product: 64
// rows of 256 ids, beam 16 and max_len 512 took a server from 49 MB to
// 1.1 GB. So each request's memory is estimated from that product before it
// runs (requestMemory) and held against a per-request and a per-server
// budget.
const (
	// DefaultMaxRequestMemory is the most memory one request may need.
	DefaultMaxRequestMemory = 256 << 20
	// DefaultMaxMemory is the most the requests in flight may need
	// together, below the Kubernetes manifest's 1 GiB limit with room for
	// the models and the runtime.
	DefaultMaxMemory = 640 << 20
)

// Bytes per element of what requestMemory counts.
const (
	// nodeBytes is one token of a search's history (decode's beam node:
	// token, parent, depth), twice over for slice growth.
	nodeBytes = 2 * 16
	// attnBytes is one attention weight recorded by a search (float32,
	// twice over for slice growth) and kept in the result.
	attnBytes = 2*4 + 4
	// attnJSONBytes is one attention weight in the answer's JSON.
	attnJSONBytes = 12
	// tokenAnswerBytes is one output token in the answer: its id in the
	// result and in the JSON, and its text.
	tokenAnswerBytes = 8 + 8 + 16
)

// rowMemory estimates the bytes one row of a request takes, with a source
// of n tokens, at most T output tokens, beam width K (1: greedy), N
// hypotheses answered, and attention recorded and answered or not: the
// search's history, the decoder's slots (states, encoder outputs,
// log-probs, attention) and the answer.
func rowMemory(c attention.Config, n, T, K, N int, withAttention bool) int64 {
	states := int64(1)
	if c.Cell != attention.GRU {
		states = 2
	}
	H, L, V := int64(c.Hidden), int64(max(c.Layers, 1)), int64(c.TgtVocab)
	n64, T64, K64, N64 := int64(n), int64(T), int64(K), int64(N)
	slots := K64 * 4 * (2*states*L*H + n64*H + V + n64 + 8)
	history := K64 * T64 * nodeBytes
	answer := N64 * T64 * tokenAnswerBytes
	if withAttention {
		history += K64 * T64 * n64 * attnBytes
		answer += T64 * n64 * attnJSONBytes
	}
	return slots + history + answer
}

// requestMemory estimates the bytes job takes on a model of config c: the
// sum of its rows' rowMemory, each at its output limit (limits, one per
// row: Server.outputLimits', whatever setting gives it). The rows are
// token ids (a request's texts are tokenised before the estimate), so a
// source's length is its pieces, never its characters: a tokenizer may
// give several per character.
func requestMemory(c attention.Config, job Job, limits []translate.Limits) int64 {
	K, N := max(job.Beam, 1), max(job.NBest, 1)
	var total int64
	for i, row := range job.IDs {
		// replace_unk records the attention (to find each unknown
		// token's source) even when it is not answered.
		total += rowMemory(c, len(row), limits[i].Max, K, N, job.Attention || job.Alignment || job.ReplaceUnk)
	}
	return total
}

// longestLimit returns the largest Max of limits.
func longestLimit(limits []translate.Limits) int {
	most := 0
	for _, l := range limits {
		most = max(most, l.Max)
	}
	return most
}

// memoryBudget is the server's budget: the memory its requests in flight
// may need together, and the idle buffers the process keeps for the next
// ones (package idlemem), which are dropped to make room.
type memoryBudget struct {
	max  int64
	used atomic.Int64
}

// reserve takes n bytes from the budget, or reports false (taking
// nothing) when fewer are left once the idle buffers are dropped.
func (b *memoryBudget) reserve(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.max {
			return false
		}
		if used+n+idlemem.Bytes() > b.max {
			idlemem.Trim()
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// release gives n reserved bytes back.
func (b *memoryBudget) release(n int64) { b.used.Add(-n) }

// mib formats bytes as MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
