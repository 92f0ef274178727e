package modeldir

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	fx "github.com/attnx/attnx/internal/fixtures"
)

// The special token ids of the tutorial's architectures default to the
// tutorial's (SOS 0, EOS 1, padding 0, no unknown token) with a note
// naming what kept the default; vocabularies (with the tutorial's "SOS"
// and "EOS" names too) and flags override them. Article models keep
// attnx's convention.
func TestExportSpecialDefaults(t *testing.T) {
	tmp := t.TempDir()
	ckpts := map[attention.Arch]string{}
	for _, a := range []attention.Arch{attention.TutorialBahdanau, attention.TutorialLocation, attention.LuongDot} {
		cfg := attention.Config{Arch: a, Cell: attention.GRU, Hidden: 5, Layers: 1, SrcVocab: 9, TgtVocab: 11}
		if a == attention.TutorialLocation {
			cfg.MaxLength = 6
		}
		ckpts[a] = filepath.Join(tmp, string(a)+".safetensors")
		fx.WriteRandomCheckpoint(t, ckpts[a], cfg, 1)
	}
	lang := writeVocab(t, tmp, "lang.json", vocab(11, "SOS", "EOS"))
	angle := writeVocab(t, tmp, "angle.json", vocab(11, "x", "y", "<pad>", "<sos>", "<eos>"))
	src := writeVocab(t, tmp, "src.json", vocab(9, "SOS", "EOS"))
	five, six := int64(5), int64(6)
	const tb = "tutorial-bahdanau"
	cases := []struct {
		name  string
		arch  attention.Arch
		opt   Options
		want  attention.Special
		notes []string
	}{
		{"tutorial, nothing given", attention.TutorialBahdanau, Options{}, attention.Special{SOS: 0, EOS: 1, PAD: 0, UNK: -1},
			[]string{"special tokens SOS 0, EOS 1, PAD 0: PyTorch's seq2seq tutorial's, the default for " + tb + " models (pass --sos/--eos/--pad to change them)"}},
		{"tutorial-location, nothing given", attention.TutorialLocation, Options{}, attention.Special{SOS: 0, EOS: 1, PAD: 0, UNK: -1},
			[]string{"special tokens SOS 0, EOS 1, PAD 0: PyTorch's seq2seq tutorial's, the default for tutorial-location models (pass --sos/--eos/--pad to change them)"}},
		{"tutorial's Lang vocabularies", attention.TutorialBahdanau, Options{TgtVocab: lang, SrcVocab: src}, attention.Special{SOS: 0, EOS: 1, PAD: 0, UNK: -1},
			[]string{"special tokens PAD 0: PyTorch's seq2seq tutorial's, the default for " + tb + " models (pass --pad to change them)"}},
		{"angle-bracket vocabulary", attention.TutorialBahdanau, Options{TgtVocab: angle}, attention.Special{SOS: 3, EOS: 4, PAD: 2, UNK: -1}, nil},
		{"flags", attention.TutorialBahdanau, Options{SOS: &five, EOS: &six}, attention.Special{SOS: 5, EOS: 6, PAD: 0, UNK: -1},
			[]string{"special tokens PAD 0: PyTorch's seq2seq tutorial's, the default for " + tb + " models (pass --pad to change them)"}},
		{"article model", attention.LuongDot, Options{}, attention.DefaultSpecial, nil},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := mustExport(t, ckpts[c.arch], filepath.Join(tmp, "m", string(rune('a'+i))), c.opt)
			if res.Special != c.want {
				t.Errorf("special %+v, want %+v", res.Special, c.want)
			}
			var notes []string
			for _, n := range res.Notes {
				if strings.HasPrefix(n, "special tokens ") {
					notes = append(notes, n)
				}
			}
			if !reflect.DeepEqual(notes, c.notes) {
				t.Errorf("notes %q\nwant %q", notes, c.notes)
			}
		})
	}
	// An article model's vocabulary must name its tokens: "SOS" does not do.
	_, err := Export(ckpts[attention.LuongDot], filepath.Join(tmp, "article-lang"), Options{TgtVocab: lang})
	if want := "--tgt-vocab " + lang + " has no <sos> token; pass --sos N to name its id"; err == nil || err.Error() != want {
		t.Errorf("article model with the tutorial's vocabulary: %v, want %s", err, want)
	}
}
