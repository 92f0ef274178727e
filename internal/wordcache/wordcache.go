// Package wordcache is the tokenizers' cache of segmented words: a
// least-recently-used map from a word to its pieces, bounded in bytes.
package wordcache

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Word cache bounds: the bytes a tokenizer's cache of segmented words may
// hold, and the longest word it keeps (longer ones are rare, each costs
// as much as many short ones, and segmenting one again is cheap).
const (
	// Bytes bounds the bytes of one tokenizer's word cache:
	// the words, their pieces and the entries' bookkeeping.
	Bytes = 16 << 20
	// MaxWord is the longest word, in bytes, the cache keeps.
	MaxWord = 64
)

// EntryOverhead is what one entry costs beside its strings: the
// key's and the slice's headers, the list element and the map's slot.
const EntryOverhead = 2*int(unsafe.Sizeof("")) + int(unsafe.Sizeof([]string{})) + 96

// Cache is a least-recently-used map from a word to its pieces,
// bounded by the bytes it holds rather than by its entries: a word's cost
// grows with its length, so a count bound held anything from a few to a
// few hundred MiB.
type Cache struct {
	mu           sync.Mutex
	lru          *simplelru.LRU[string, []string]
	bytes, max   int
	hits, misses atomic.Uint64
}

// New makes a cache of at most maxBytes.
func New(maxBytes int) *Cache {
	c := &Cache{max: maxBytes}
	// The entry count is bounded by the bytes (each costs more than
	// EntryOverhead); the LRU's own count bound only has to be above
	// that.
	lru, err := simplelru.NewLRU[string, []string](maxBytes/EntryOverhead+1, func(k string, v []string) {
		c.bytes -= entryCost(k, v)
	})
	if err != nil {
		panic(err) // only for a size <= 0, which the division rules out
	}
	c.lru = lru
	return c
}

// entryCost is the bytes one cached word costs.
func entryCost(word string, pieces []string) int {
	n := EntryOverhead + len(word) + int(unsafe.Sizeof(""))*cap(pieces)
	for _, p := range pieces {
		n += len(p)
	}
	return n
}

// Get returns a word's pieces, if held.
func (c *Cache) Get(word string) ([]string, bool) {
	c.mu.Lock()
	v, ok := c.lru.Get(word)
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return v, ok
}

// Add keeps a word's pieces unless the word is longer than
// MaxWord, dropping the least recently used words until the
// cache is within its bytes.
func (c *Cache) Add(word string, pieces []string) {
	if len(word) > MaxWord {
		return
	}
	// The pieces may be substrings of a longer string made while merging:
	// copied into one string of their own, they keep only their bytes.
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	buf := make([]byte, 0, n)
	kept := make([]string, len(pieces))
	for _, p := range pieces {
		buf = append(buf, p...)
	}
	all := string(buf)
	for i, p := range pieces {
		kept[i], all = all[:len(p)], all[len(p):]
	}
	cost := entryCost(word, kept)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(word); ok {
		c.bytes -= entryCost(word, old)
		c.lru.Remove(word)
	}
	c.lru.Add(word, kept)
	c.bytes += cost
	for c.bytes > c.max && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
	}
}

// Stats returns the cache's counts.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: c.lru.Len(), Bytes: int64(c.bytes), MaxBytes: int64(c.max), Hits: c.hits.Load(), Misses: c.misses.Load()}
}

// Stats counts a tokenizer's cache of segmented words.
type Stats struct {
	// Entries is the words held now.
	Entries int
	// Bytes is what they cost, at most MaxBytes.
	Bytes, MaxBytes int64
	// Hits and Misses count the lookups since the tokenizer was made.
	Hits, Misses uint64
}
