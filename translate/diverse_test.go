package translate

import (
	"math"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
)

// TestCheckDiverse: fairseq's other searches are taken under its rules
// one at a time (its build_generator's "mutually exclusive"), the groups
// dividing the beam, a strength only with groups; each refusal names the
// setting.
func TestCheckDiverse(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name string
		opt  Options
		want string // "": accepted
	}{
		{"match source len", Options{MatchSourceLen: true}, ""},
		{"groups", Options{Beam: 4, DiverseBeamGroups: 2, DiverseBeamStrength: f(1.5)}, ""},
		{"groups, the model's beam", Options{DiverseBeamGroups: 2}, ""},
		{"rate 0", Options{Beam: 3, DiversityRate: f(0)}, ""},
		{"groups not dividing", Options{Beam: 5, DiverseBeamGroups: 2}, "DiverseBeamGroups = 2 with Beam 5: want groups that divide the beam"},
		{"negative groups", Options{Beam: 4, DiverseBeamGroups: -1}, "DiverseBeamGroups = -1"},
		{"strength alone", Options{Beam: 4, DiverseBeamStrength: f(1)}, "DiverseBeamStrength = 1 without DiverseBeamGroups"},
		{"NaN strength", Options{Beam: 4, DiverseBeamGroups: 2, DiverseBeamStrength: f(math.NaN())}, "DiverseBeamStrength = NaN"},
		{"infinite rate", Options{Beam: 4, DiversityRate: f(math.Inf(-1))}, "DiversityRate = -Inf"},
		{"groups and match", Options{Beam: 4, DiverseBeamGroups: 2, MatchSourceLen: true}, "DiverseBeamGroups with MatchSourceLen: at most one"},
		{"sampling and rate", Options{Beam: 4, Sampling: true, DiversityRate: f(0.5)}, "Sampling with DiversityRate: at most one"},
	} {
		c.opt.Rules, c.opt.Engine = RulesFairseq, EngineSteps
		err := checkOptions(c.opt)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	// Under the other rules the table's refusal, not a fairseq check.
	err := checkOptions(Options{Rules: RulesOpenNMT, Engine: EngineSteps, Beam: 5, DiverseBeamGroups: 2})
	if err == nil || !strings.Contains(err.Error(), `DiverseBeamGroups = 2: Rules "opennmt" do not implement it: it is fairseq's DiverseBeamSearch`) {
		t.Errorf("groups under opennmt: %v", err)
	}
}

// TestSetDiverse: the searches built for a call carry fairseq's search
// settings; with MatchSourceLen each row's source length (its tokens but
// </s> and <pad>) and the limit of the call's longest source.
func TestSetDiverse(t *testing.T) {
	sp := attention.Special{SOS: 2, EOS: 2, PAD: 1, UNK: 3}
	rows := [][]int64{{7, 8, 2}, {7, 8, 9, 10, 2}, {5, 2, 1, 1}}
	var b decode.FairseqBeam
	searchOpts{matchSrc: true}.setDiverse(&b, rows, rows[2], sp)
	if !b.MatchSourceLen || b.SrcLen != 1 || b.MaxLen != 5 {
		t.Errorf("match source len: %+v; want SrcLen 1, MaxLen 5 (4 + </s>)", b)
	}
	b = decode.FairseqBeam{}
	searchOpts{matchSrc: true, maxLenCap: 3}.setDiverse(&b, rows, rows[0], sp)
	if b.SrcLen != 2 || b.MaxLen != 3 {
		t.Errorf("match source len, capped at 3: SrcLen %d, MaxLen %d", b.SrcLen, b.MaxLen)
	}
	b = decode.FairseqBeam{}
	searchOpts{groups: 2}.setDiverse(&b, rows, rows[0], sp)
	if b.Groups != 2 || b.GroupStrength != DefaultDiverseBeamStrength {
		t.Errorf("groups: %d, strength %v; want 2 and fairseq's 0.5", b.Groups, b.GroupStrength)
	}
	s, r := 1.25, 0.0
	b = decode.FairseqBeam{}
	searchOpts{groups: 3, groupStrength: &s}.setDiverse(&b, rows, rows[0], sp)
	if b.GroupStrength != 1.25 {
		t.Errorf("strength %v, want 1.25", b.GroupStrength)
	}
	b = decode.FairseqBeam{}
	searchOpts{divRate: &r}.setDiverse(&b, rows, rows[0], sp)
	if !b.Siblings || b.DiversityRate != 0 || b.Groups != 0 || b.MatchSourceLen {
		t.Errorf("rate 0: %+v; want the siblings' search at rate 0 alone", b)
	}
}
