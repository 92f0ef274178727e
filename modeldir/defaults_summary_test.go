package modeldir

import "testing"

// TestDefaultsSummary: the reader's line for each kind of defaults.
func TestDefaultsSummary(t *testing.T) {
	one := 1.0
	for _, c := range []struct {
		d    Defaults
		want string
	}{
		{Defaults{}, "greedy"},
		{Defaults{Beam: 5, Rules: "opennmt", NBest: 2, LengthPenalty: &one, LengthPenaltyForm: "avg"},
			"beam 5 with OpenNMT-py's beam search, n-best 2, length penalty avg (alpha 1), max length min(250, 1.25 x the source + 5)"},
		{Defaults{Rules: "fairseq", MaxLenFactor: 1.2, MaxLenAdd: 10, MaxLen: 200, BanUNK: true},
			"beam 1 with fairseq's SequenceGenerator, max length min(200, 1.2 x the source + 10), ban-unk"},
		{Defaults{Beam: 5, Rules: "joeynmt", MaxLenFactor: 1.5, MinLen: 2, ReplaceUnk: true, Batching: &Batching{Style: BatchingJoeyNMT, Size: 10}},
			"beam 5 with JoeyNMT's beam search, min length 2, max length 1.5 x n, n the longest source of its batch (JoeyNMT's, in file order, of 10 sentences), replace-unk"},
		{Defaults{Beam: 4, LengthPenalty: &one, MaxLen: 30, Batching: &Batching{Style: BatchingOpenNMT, Size: 3000, Tokens: true}},
			"beam 4, length penalty power (alpha 1), max length 30"},
	} {
		if got := c.d.Summary(); got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.d, got, c.want)
		}
	}
}
