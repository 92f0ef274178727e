package modeldir

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	fx "github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/onnxfile"
)

// TestExportEveryArchAndCell: Export writes the graphs of every
// architecture with both cells, GRU ones without cell inputs and outputs,
// and attnx.json records the cell, the embedding size and max_length.
func TestExportEveryArchAndCell(t *testing.T) {
	parent := t.TempDir()
	for _, arch := range attention.StateDictArchs {
		for _, cell := range attention.Cells {
			cfg := attention.Config{Arch: arch, Cell: cell, Hidden: 6, Embedding: 4, Layers: 2, SrcVocab: 9, TgtVocab: 8}
			if arch == attention.TutorialLocation {
				cfg.MaxLength = 7
			}
			name := fmt.Sprintf("%s_%s", arch, cell)
			ckpt := filepath.Join(parent, name+".safetensors")
			fx.WriteRandomCheckpoint(t, ckpt, cfg, int64(len(name)))
			dir := filepath.Join(parent, name)
			res := mustExport(t, ckpt, dir, Options{Greedy: true, Beam: true})
			if res.Config != cfg {
				t.Errorf("%s: config %v, want %v", name, res.Config, cfg)
			}
			info, err := ReadInfo(filepath.Join(dir, InfoFile))
			if err != nil {
				t.Fatal(err)
			}
			if info.Config != cfg {
				t.Errorf("%s: attnx.json records %v, want %v", name, info.Config, cfg)
			}
			cellIO := map[bool]string{true: " cell", false: ""}[cell == attention.LSTM]
			nextCell := map[bool]string{true: " next_cell", false: ""}[cell == attention.LSTM]
			for _, g := range []struct{ file, in, out string }{
				{EncoderFile, "source_ids source_lengths", "encoder_outputs hidden" + cellIO},
				{DecoderFile, "input_ids hidden" + cellIO + " encoder_outputs source_lengths", "log_probs next_hidden" + nextCell + " attention"},
				{GreedyFile, "source_ids source_lengths max_len", "output_ids attention token_log_probs"},
				{BeamFile, "source_ids source_lengths max_len beam_size length_penalty", "output_ids lengths scores normalized_scores attention"},
			} {
				mp, err := onnxfile.Load(filepath.Join(dir, g.file))
				if err != nil {
					t.Fatal(err)
				}
				s := onnxfile.Summarize(mp)
				names := func(vs []onnxfile.ValueSummary) string {
					var n []string
					for _, v := range vs {
						n = append(n, v.Name)
					}
					return strings.Join(n, " ")
				}
				if got := names(s.Inputs); got != g.in {
					t.Errorf("%s %s: inputs %s, want %s", name, g.file, got, g.in)
				}
				if got := names(s.Outputs); got != g.out {
					t.Errorf("%s %s: outputs %s, want %s", name, g.file, got, g.out)
				}
				if s.Metadata["attnx.arch"] != string(arch) || s.Metadata["attnx.cell"] != string(cell) {
					t.Errorf("%s %s: metadata %v", name, g.file, s.Metadata)
				}
			}
		}
	}
}
