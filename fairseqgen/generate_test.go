package fairseqgen

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fairseqtest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

var (
	fixture = filepath.Join("..", "testdata", "toolkits", "fairseq-generate")
	// variantsFile lists the settings make_fairseq_generate.sh ran
	// fairseq-generate with.
	variantsFile = filepath.Join("..", "testdata", "toolkits", "fairseq_generate_variants.tsv")
)

// Variant is one setting of fairseq_generate_variants.tsv as the library
// takes it: the Translator's options, Generate's, the data-bin and the
// fixture whose checkpoint decodes it.
type Variant struct {
	Translate translate.Options
	Generate  Options
	DataBin   string
	Model     string
}

// Variants are fairseq_generate_variants.tsv's settings, by name.
func Variants() map[string]Variant {
	lenA := func(v Variant) Variant {
		v.Translate.MaxLenA, v.Translate.MaxLen = 0.2, 4
		v.Generate.BatchSize = 5
		return v
	}
	base := Variant{Translate: translate.Options{Beam: 5, NBest: 1}, DataBin: "data-bin", Model: "fairseq-long"}
	moses := func(f func(*Variant)) Variant {
		v := base
		v.DataBin, v.Model = "data-bin-moses", "fairseq-moses"
		v.Generate.BPE, v.Generate.Tokenizer, v.Generate.SrcLang, v.Generate.TgtLang = "subword_nmt", "moses", "en", "de"
		f(&v)
		return v
	}
	with := func(f func(*Variant)) Variant { v := base; f(&v); return v }
	return map[string]Variant{
		"default":      base,
		"beam1":        with(func(v *Variant) { v.Translate.Beam = 1; v.Generate.Beam = 1 }),
		"nbest2":       with(func(v *Variant) { v.Translate.NBest = 2; v.Generate.NBest = 2 }),
		"removebpe":    with(func(v *Variant) { v.Generate.PostProcess = "subword_nmt" }),
		"quiet":        with(func(v *Variant) { v.Generate.PostProcess = "subword_nmt"; v.Generate.Quiet = true }),
		"batch2":       with(func(v *Variant) { v.Generate.BatchSize = 2 }),
		"maxtokens100": with(func(v *Variant) { v.Generate.MaxTokens = 100 }),
		"maxlena":      lenA(base),
		"sacrebleu":    with(func(v *Variant) { v.Generate.Scoring = ScoringSacreBLEU; v.Generate.PostProcess = "subword_nmt" }),
		"lazy":         with(func(v *Variant) { v.Generate.DatasetImpl = "lazy"; v.DataBin = "data-bin-lazy" }),
		"valid":        with(func(v *Variant) { v.Generate.Subset = "valid" }),
		"moses":        moses(func(*Variant) {}),
		"mosessacre":   moses(func(v *Variant) { v.Generate.PostProcess = "subword_nmt"; v.Generate.Scoring = ScoringSacreBLEU }),
		"alignhard":    with(func(v *Variant) { v.Generate.PrintAlignment = AlignHard }),
		"alignsoft":    with(func(v *Variant) { v.Generate.PrintAlignment = AlignSoft; v.Generate.PostProcess = "subword_nmt" }),
		"alignbatch1":  with(func(v *Variant) { v.Generate.PrintAlignment = AlignSoft; v.Generate.BatchSize = 1 }),
		"alignnbest": with(func(v *Variant) {
			v.Translate.NBest, v.Generate.NBest, v.Generate.BatchSize = 3, 3, 5
			v.Generate.PrintAlignment = AlignHard
		}),
		"matchsrc": with(func(v *Variant) {
			v.Translate.MatchSourceLen, v.Translate.NBest, v.Generate.NBest = true, 5, 5
		}),
		"matchsrcbatch3": with(func(v *Variant) { v.Translate.MatchSourceLen, v.Generate.BatchSize = true, 3 }),
		"diverse": with(func(v *Variant) {
			v.Translate.Beam, v.Translate.NBest, v.Translate.DiverseBeamGroups = 4, 4, 2
			v.Generate.Beam, v.Generate.NBest = 4, 4
		}),
		"diversestrength": with(func(v *Variant) {
			s, lp := 1.5, 0.8
			v.Translate.Beam, v.Translate.NBest, v.Translate.DiverseBeamGroups, v.Translate.DiverseBeamStrength = 6, 3, 3, &s
			v.Translate.LengthPenalty = &lp
			v.Generate.Beam, v.Generate.NBest = 6, 3
		}),
		"siblings": with(func(v *Variant) {
			r := 0.5
			v.Translate.DiversityRate, v.Translate.NBest, v.Generate.NBest = &r, 3, 3
		}),
		"siblingsrate0": with(func(v *Variant) {
			r := 0.0
			v.Translate.DiversityRate, v.Translate.Beam, v.Generate.Beam = &r, 3, 3
		}),
		"raw": with(func(v *Variant) {
			v.Generate.DatasetImpl = "raw"
			v.DataBin = "data-bin-raw"
			v.Generate.PostProcess = "subword_nmt"
		}),
	}
}

// TestGenerateMatchesFairseq exports fairseq-long's checkpoint_best.pt
// (and fairseq-moses's, for its data-bin-moses, text tokenized by
// sacremoses then BPE'd, with --tokenizer moses --bpe subword_nmt) and
// runs Generate on the data-bins fairseq-preprocess wrote with each
// setting fairseq-generate ran with (fairseq_generate_variants.tsv): its
// output must be fairseq-generate's line for line: the same lines in the
// same order, S-, T- and the H-/D- texts identical, the scores within
// scoreRel and posAbs, the BLEU line identical; a sentence whose text
// differs must be a near tie by fairseq's own gaps.
func TestGenerateMatchesFairseq(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	models := map[string]string{}
	for _, fx := range []string{"fairseq-long", "fairseq-moses"} {
		models[fx] = filepath.Join(t.TempDir(), fx)
		if _, err := modeldir.Export(filepath.Join("..", "testdata", "toolkits", fx, "checkpoint_best.pt"), models[fx], modeldir.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	variants := Variants()
	for _, name := range variantNames(t) {
		t.Run(name, func(t *testing.T) {
			v, ok := variants[name]
			if !ok {
				t.Fatalf("fairseq_generate_variants.tsv's %s has no Variant", name)
			}
			got := RunVariant(t, models[v.Model], v)
			c := fairseqtest.Compare(t, filepath.Join(fixture, "expected", name), got)
			t.Logf("%s: %d of %d lines identical, the others within tolerance; near ties %v", name, c.Identical, c.Lines, c.Ties)
		})
	}
}

// RunVariant runs Generate with v on model's Translator.
func RunVariant(t *testing.T, model string, v Variant) string {
	t.Helper()
	tr, err := translate.Open(model, v.Translate)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var buf bytes.Buffer
	if _, err := Generate(context.Background(), tr, filepath.Join(fixture, v.DataBin), v.Generate, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func variantNames(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(variantsFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Split(line, "\t"); f[0] != "" && !strings.HasPrefix(f[0], "#") {
			names = append(names, f[0])
		}
	}
	return names
}

// TestGenerateRefusals: a data-bin binarized with another dictionary than
// the model's, a split that is not there and settings fairseq does not
// know are refused before anything is written, naming what is at fault.
func TestGenerateRefusals(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	model := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export(filepath.Join("..", "testdata", "toolkits", "fairseq-long", "checkpoint_best.pt"), model, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	tr, err := translate.Open(model, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// The data-bin with two entries of dict.de.txt swapped.
	other := t.TempDir()
	for _, f := range []string{"dict.en.txt", "dict.de.txt", "test.en-de.en.bin", "test.en-de.en.idx", "test.en-de.de.bin", "test.en-de.de.idx"} {
		b, err := os.ReadFile(filepath.Join(fixture, "data-bin", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "dict.de.txt" {
			lines := strings.SplitAfter(string(b), "\n")
			lines[0], lines[1] = lines[1], lines[0]
			b = []byte(strings.Join(lines, ""))
		}
		if err := os.WriteFile(filepath.Join(other, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, dir string
		opt       Options
		want      string
	}{
		{"another dictionary", other, Options{}, `id 4 is "` + tr.Info().TgtTokens[4] + `" in the model's target vocabulary and "` + tr.Info().TgtTokens[5] + `" in the data-bin's dict.de.txt`},
		{"no such split", filepath.Join(fixture, "data-bin"), Options{Subset: "train"}, `split "train" of en-de is not there in any --dataset-impl`},
		{"raw asked of a binary data-bin", filepath.Join(fixture, "data-bin"), Options{DatasetImpl: "raw"}, "is not there in --dataset-impl raw"},
		{"unknown scoring", filepath.Join(fixture, "data-bin"), Options{Scoring: "chrf"}, `--scoring "chrf": expected bleu or sacrebleu`},
		{"unknown alignment", filepath.Join(fixture, "data-bin"), Options{PrintAlignment: "medium"}, `--print-alignment "medium": expected hard or soft`},
		{"unknown post-process", filepath.Join(fixture, "data-bin"), Options{PostProcess: "bpe"}, `--post-process "bpe"`},
		{"no language pair", t.TempDir(), Options{}, "no file named SPLIT.SRC-TGT.LANG"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Generate(context.Background(), tr, c.dir, c.opt, &buf)
			if err == nil || !strings.Contains(err.Error(), c.want) || buf.Len() != 0 {
				t.Errorf("Generate: %v, %d bytes written\nwant an error with %q and nothing written", err, buf.Len(), c.want)
			}
		})
	}
}
