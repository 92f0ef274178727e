package serve

import (
	"testing"

	"github.com/attnx/attnx/attention"
)

// TestBatchingThreads: small decoder steps get one ORT thread, large ones
// ORT's default; the estimate of a step's size counts the cell's gates of
// every layer, the attention and the classifier.
func TestBatchingThreads(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     attention.Config
		macs    int64
		threads int
	}{
		// 4*64*(64+64) + 2*64*64 + 64*15
		{"the demo's Luong model", attention.Config{Arch: attention.LuongGeneral, Hidden: 64, Embedding: 64, Layers: 1, SrcVocab: 63, TgtVocab: 15}, 41920, 1},
		// 4*256*512 + 2*256*256 + 256*10000
		{"H=256, V=10000", attention.Config{Arch: attention.Bahdanau, Hidden: 256, Layers: 1, SrcVocab: 10000, TgtVocab: 10000}, 3215360, 0},
		// 3*128*(32+128) + 3*128*256 + 2*128*128 + 128*500
		{"GRU, two layers, E<H", attention.Config{Arch: attention.LuongDot, Cell: attention.GRU, Hidden: 128, Embedding: 32, Layers: 2, SrcVocab: 100, TgtVocab: 500}, 256512, 1},
		// 4*512*1024*2 (two layers, the second's input H) ... + 512*32000
		{"H=512, two layers, V=32000", attention.Config{Arch: attention.Bahdanau, Hidden: 512, Layers: 2, SrcVocab: 32000, TgtVocab: 32000}, 4*512*1024 + 4*512*1024 + 2*512*512 + 512*32000, 0},
	} {
		if got := StepMACs(c.cfg); got != c.macs {
			t.Errorf("%s: StepMACs = %d, want %d", c.name, got, c.macs)
		}
		if got := BatchingThreads(c.cfg); got != c.threads {
			t.Errorf("%s: BatchingThreads = %d, want %d", c.name, got, c.threads)
		}
	}
}
