package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenNMT feeds arbitrary bytes to the OpenNMT-py reader through the
// path a user's file takes: torch.save's container, then the toolkit's
// entries (opt, vocab, model, generator, optim). The seeds are the
// committed OpenNMT-py checkpoints (2.x torchtext Fields, 3.x, the
// safetensors layout's .pt).
func FuzzOpenNMT(f *testing.F) {
	for _, n := range []string{"toolkits/onmt_v2.pt", "toolkits/onmt_v3.pt", "toolkits/onmt_st/model.pt"} {
		f.Add(fixture(f, n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		ReadOpenNMT(sd, filepath.Join(t.TempDir(), "model.pt"))
	})
}

// FuzzJoeyNMT feeds an arbitrary config.yaml and vocabulary file to the
// JoeyNMT reader: an error or a model description, never a panic.
func FuzzJoeyNMT(f *testing.F) {
	cfg := fixture(f, "toolkits/joey/config.yaml")
	vocab := fixture(f, "toolkits/joey/src_vocab.txt")
	f.Add(cfg, vocab)
	f.Add(cfg, []byte("<unk>\n<unk>\n\n\xff\n"))
	f.Add([]byte("data:\n  src: {voc_file: /etc/passwd}\nmodel: {encoder: {type: transformer}}\n"), vocab)
	f.Add([]byte("a: &a [*a, *a]\n"), vocab)
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, config, vocab []byte) {
		dir := t.TempDir()
		for name, data := range map[string][]byte{"config.yaml": config, "src_vocab.txt": vocab, "trg_vocab.txt": vocab} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ReadJoeyNMT(filepath.Join(dir, "config.yaml"))
	})
}

// FuzzFairseq feeds arbitrary bytes to the fairseq reader through the path
// a user's file takes (torch.save's container, the cfg or args, the
// dictionaries beside it), and arbitrary bytes as a dictionary: an error
// or a reading, never a panic. The seeds are a checkpoint fairseq-train
// wrote and its dictionary.
func FuzzFairseq(f *testing.F) {
	root := filepath.Join("..", "testdata", "toolkits", "fairseq-lstm")
	ckpt, err := os.ReadFile(filepath.Join(root, "checkpoint_best.pt"))
	if err != nil {
		f.Fatal(err)
	}
	dict, err := os.ReadFile(filepath.Join(root, "data-bin", "dict.de.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ckpt, dict)
	f.Add([]byte{}, []byte("a 1\na 2 #fairseq:overwrite\n"))
	f.Fuzz(func(t *testing.T, data, dictText []byte) {
		dir := t.TempDir()
		for _, lang := range []string{"en", "de"} {
			if err := os.WriteFile(filepath.Join(dir, "dict."+lang+".txt"), dictText, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ReadFairseqDict(filepath.Join(dir, "dict.de.txt"))
		sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
		if err != nil || sd.Origin == nil {
			return
		}
		ReadFairseq(sd.Origin, filepath.Join(dir, "checkpoint_best.pt"), FairseqFiles{SrcLang: "en", TgtLang: "de"}, 10, 10)
		FairseqArch(sd.Origin)
	})
}

// FuzzGNMT feeds arbitrary bytes to the GNMT reader through the path a
// user's file takes (torch.save's container, then model_config, config
// and the tokenizer's state): an error or a reading, never a panic. The
// seeds are the checkpoints DeepLearningExamples' and MLPerf's train.py
// wrote.
func FuzzGNMT(f *testing.F) {
	for _, d := range []string{"gnmt-dle", "gnmt-mlperf"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "toolkits", d, "model_best.pth"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := ReadPyTorch(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		g, err := ReadGNMT(sd.Origin, "model_best.pth")
		if err != nil {
			return
		}
		if g.Tokenizer.BPE != nil {
			g.Tokenizer.BPE.Codes()
		}
	})
}
