package decode

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFairseqDiverseValidate: fairseq's searches are one at a time, the
// groups divide the beam, and the strengths and rates are finite; each
// refusal names the setting at fault.
func TestFairseqDiverseValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		b    FairseqBeam
		want string // "" accepted
	}{
		{"groups", FairseqBeam{K: 4, NBest: 1, Groups: 2, GroupStrength: 0.5}, ""},
		{"groups of one each", FairseqBeam{K: 3, NBest: 1, Groups: 3}, ""},
		{"groups not dividing", FairseqBeam{K: 5, NBest: 1, Groups: 2}, "diverse beam groups 2 with beam 5"},
		{"negative groups", FairseqBeam{K: 4, NBest: 1, Groups: -1}, "diverse beam groups -1"},
		{"NaN strength", FairseqBeam{K: 4, NBest: 1, Groups: 2, GroupStrength: math.NaN()}, "diverse beam strength NaN"},
		{"infinite rate", FairseqBeam{K: 4, NBest: 1, Siblings: true, DiversityRate: math.Inf(1)}, "diversity rate +Inf"},
		{"two searches", FairseqBeam{K: 4, NBest: 1, Groups: 2, MatchSourceLen: true}, "mutually exclusive"},
		{"siblings and sampling", FairseqBeam{K: 4, NBest: 1, Siblings: true, Sampling: true, Rand: nil}, ""},
		{"negative source length", FairseqBeam{K: 4, NBest: 1, MatchSourceLen: true, SrcLen: -1}, "source length -1"},
	} {
		err := c.b.Validate()
		switch {
		case c.name == "siblings and sampling":
			// Sampling without Rand is refused first; with Rand, the pair is.
			c.b.Rand = rand.New(rand.NewPCG(1, 1))
			if err = c.b.Validate(); err == nil || !strings.Contains(err.Error(), "mutually exclusive") {
				t.Errorf("%s: %v, want the pair refused", c.name, err)
			}
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestMatchSourceLenRule: before step SrcLen </s> is banned, from it on
// its log-prob is 0; the other tokens are left as they are.
func TestMatchSourceLenRule(t *testing.T) {
	for _, c := range []struct {
		step, srcLen int
		want         float32
	}{{0, 2, float32(math.Inf(-1))}, {1, 2, float32(math.Inf(-1))}, {2, 2, 0}, {5, 2, 0}, {0, 0, 0}} {
		lp := []float32{-1, -2, -3, -4}
		matchSourceLen(lp, c.step, c.srcLen, 2)
		if lp[2] != c.want || lp[0] != -1 || lp[1] != -2 || lp[3] != -4 {
			t.Errorf("step %d, source length %d: %v, want </s> at %v and the rest unchanged", c.step, c.srcLen, lp, c.want)
		}
	}
}
