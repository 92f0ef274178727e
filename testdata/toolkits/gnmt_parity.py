"""Dumps step-isolated reference values of a GNMT checkpoint, computed by
the repository's own modules (seq2seq.models.gnmt.GNMT, built from the
checkpoint's model_config as translate.py builds it), for attnx's parity
test (attention/gnmt_test.go):

    /usr/bin/python3 gnmt_parity.py dle|mlperf REPO_DIR CHECKPOINT BPE_TEXT OUT.json

REPO_DIR is PyTorch/Translation/GNMT of DeepLearningExamples or
retired_benchmarks/gnmt/pytorch of mlcommons/training; PYTHONPATH must
hold subword-nmt (DLE's checkpoint pickles its BPE object).

The source batch is three lines of BPE_TEXT (BPE-segmented text, the
first tab-separated column of each line): of its first six lines'
distinct lengths, the longest, the middle one and the shortest, each mapped to ids as the
Tokenizer's segment maps it (the checkpoint's tok2idx, UNK for a token it
lacks, BOS and EOS around), lengths descending as pack_padded_sequence
wants them, padded with PAD. It goes through model.encode; then model.decode in
inference mode runs a few steps from BOS, each fed the previous step's
argmax, its hidden state the previous step's. The JSON holds the source
rows and lengths, the encoder's output (batch-major; past each length
what the upper layers compute over the padding, which the attention's
mask leaves out), and per step the input
ids, the state before and after (the decoder's flattened hidden: h and c
of each layer in turn, [2L, batch, H]; none before the first step, where
GNMT starts from zeros), log_softmax of the logits and the attention
scores."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gnmt_standins  # noqa: E402

kind, repo, ckpt_path, text_path, out_path = sys.argv[1:6]
gnmt_standins.install(kind)
sys.path.insert(0, os.path.abspath(repo))
from seq2seq.models.gnmt import GNMT  # noqa: E402
import seq2seq.data.config as config  # noqa: E402

torch.set_num_threads(1)
ckpt = torch.load(ckpt_path, map_location="cpu")
mc = dict(ckpt["model_config"])
vocab = len(ckpt["tokenizer"]["idx2tok"])
mc["vocab_size"] = vocab
mc["batch_first"] = False
model = GNMT(**mc)
model.load_state_dict(ckpt["state_dict"])
model.eval()

tok2idx = dict(ckpt["tokenizer"]["tok2idx"])
with open(text_path, encoding="utf-8") as f:
    lines = [line.split("\t")[0].split() for line in f][:6]
rows = []
for line in sorted(lines, key=len, reverse=True):
    row = [config.BOS] + [tok2idx.get(t, config.UNK) for t in line] + [config.EOS]
    if not rows or len(row) < len(rows[-1]):
        rows.append(row)
rows = [rows[0], rows[len(rows) // 2], rows[-1]]  # the longest, a middle one, the shortest
lengths = [len(r) for r in rows]
steps = 4
src = torch.full((max(lengths), len(lengths)), config.PAD, dtype=torch.int64)
for b, row in enumerate(rows):
    src[:len(row), b] = torch.tensor(row)
src_len = torch.tensor(lengths, dtype=torch.int64)


def flat(t):
    return [float("%.9g" % x) for x in t.reshape(-1).tolist()]


with torch.no_grad():
    enc = model.encode(src, src_len)  # [src_len, batch, H]
    out = {
        "kind": kind,
        "model_config": {k: v for k, v in mc.items()},
        "source_ids": src.t().tolist(),
        "source_lengths": lengths,
        "encoder_outputs": flat(enc.transpose(0, 1)),
        "encoder_dims": list(enc.transpose(0, 1).shape),
        "steps": [],
    }
    words = torch.full((1, len(lengths)), config.BOS, dtype=torch.int64)
    hidden = None
    for _ in range(steps):
        logits, scores, ctx = model.decode(words, [enc, src_len, hidden], True)
        logp = torch.log_softmax(logits, dim=-1)  # [1, batch, V]
        step = {"input_ids": words[0].tolist(), "log_probs": flat(logp[0]),
                "attention": flat(scores[0]), "next_hidden": flat(ctx[2])}
        if hidden is not None:
            step["hidden"] = flat(hidden)
        out["steps"].append(step)
        hidden = ctx[2]
        words = logp.argmax(-1)

with open(out_path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
