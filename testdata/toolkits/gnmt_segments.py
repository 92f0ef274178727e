"""Writes what DeepLearningExamples' GNMT Tokenizer, restored from a
checkpoint as translate.py restores it (Tokenizer().set_state), makes of
each line of a raw text file, one tab-separated line each:

    Moses-tokenized and BPE-segmented text (moses_tokenizer.tokenize, then
    bpe.process_line: what tokenize() gives segment())
    the ids segment() gives (BOS first, EOS last)
    detokenize() of those ids (separator removal, then Moses
    detokenization: what translate.py prints for an output of these ids)

    /usr/bin/python3 gnmt_segments.py DLE_DIR CHECKPOINT INPUT > OUTPUT

subword_nmt (for the pickled BPE object) and sacremoses must be
importable (PYTHONPATH)."""
import sys

import torch

sys.path.insert(0, sys.argv[1])
from seq2seq.data.tokenizer import Tokenizer  # noqa: E402

ckpt = torch.load(sys.argv[2], map_location="cpu")
tok = Tokenizer()
tok.set_state(ckpt["tokenizer"])
for line in open(sys.argv[3], encoding="utf-8"):
    moses = tok.moses_tokenizer.tokenize(line, return_str=True)
    bpe = tok.bpe.process_line(moses)
    ids = tok.segment(bpe)
    assert ids == tok.tokenize(line).tolist()
    print("%s\t%s\t%s" % (bpe.strip(), " ".join(map(str, ids)), tok.detokenize(ids)))
