package serve

import (
	"testing"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// TestDecodingFlagsOverDefaults: serve's --rules and --ban-unk go through
// the resolution every surface uses: --rules spec over an OpenNMT-py
// model keeps its beam but not its penalty form, and --ban-unk bans.
func TestDecodingFlagsOverDefaults(t *testing.T) {
	onmt := modeldir.OpenNMTTranslate()
	ban := true
	j := Decoding{Rules: translate.RulesSpec, BanUNK: &ban}.job(onmt)
	if j.Rules != translate.RulesSpec || j.Beam != 5 || j.OnmtPenalty != "" || j.PenaltyWu || !j.BanUNK {
		t.Errorf("--rules spec --ban-unk over OpenNMT-py's defaults: %+v", j)
	}
	j = Decoding{}.job(onmt)
	if j.Rules != translate.RulesOpenNMT || j.Beam != 5 || j.OnmtPenalty != "avg" || j.BanUNK {
		t.Errorf("no flags over OpenNMT-py's defaults: %+v", j)
	}
}
