package modeldir

import (
	"fmt"

	"github.com/attnx/attnx/checkpoint"
)

// gnmtExportError is attnx export's answer to a GNMT checkpoint (NVIDIA
// DeepLearningExamples' GNMT or the MLPerf rnn_translator, as their
// train.py saves it): what the checkpoint is, read from it, and that no
// model directory is written for it yet; a checkpoint that does not read
// as GNMT gets the reader's error.
func gnmtExportError(sd *checkpoint.StateDict, path string) error {
	g, err := checkpoint.ReadGNMT(sd.Origin, path)
	if err != nil {
		return err
	}
	who := "NVIDIA DeepLearningExamples' GNMT"
	if g.Variant == checkpoint.GNMTMLPerf {
		who = "the MLPerf rnn_translator"
	}
	return fmt.Errorf("%s: a GNMT v2 checkpoint of %s (%d layers, hidden size %d, %d tokens): attnx export cannot write GNMT model directories yet; "+
		"the Go API decodes it as translate.py does (attention.GNMTFromStateDict, GNMTEncoder and GNMTDecoder, decode.GNMTBeam, subword.NewGNMT)",
		path, who, g.NumLayers, g.HiddenSize, len(g.Tokenizer.Vocab))
}
