"""Evaluate the demo checkpoints on heldout.txt (greedy decoding, exact match)
and print their outputs for examples.txt; records the results in metrics.json.

    /usr/bin/python3 testdata/demo/evaluate.py
"""

import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
import attnx_reference as ref  # noqa: E402
import toolkits  # noqa: E402


def load_vocab(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


def translate(model, texts, sv_index, tv, max_len=12):
    unk = sv_index["<unk>"]
    ids = [[sv_index.get(ch, unk) for ch in t] for t in texts]
    S = max(len(x) for x in ids)
    src = torch.zeros(len(ids), S, dtype=torch.int64)
    for i, x in enumerate(ids):
        src[i, :len(x)] = torch.tensor(x)
    lengths = torch.tensor([len(x) for x in ids])
    toks, lens = ref.greedy_decode(model, src, lengths, max_len=max_len)
    out = []
    for i in range(len(texts)):
        row = [k for k in toks[i, :lens[i]].tolist() if k != ref.EOS_ID]
        out.append("".join(tv[k] for k in row))
    return out


def main():
    torch.set_num_threads(1)
    sv, tv = load_vocab("src_vocab.json"), load_vocab("tgt_vocab.json")
    sv_index = {t: i for i, t in enumerate(sv)}
    with open(os.path.join(HERE, "heldout.txt")) as f:
        pairs = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    with open(os.path.join(HERE, "examples.txt")) as f:
        examples = [line.rstrip("\n") for line in f if line.strip()]
    mpath = os.path.join(HERE, "metrics.json")
    with open(mpath) as f:
        metrics = json.load(f)
    for name, info in sorted(metrics.get("models", {}).items()):
        model = toolkits.load_model(os.path.join(HERE, info["file"]))
        got = translate(model, [s for s, _ in pairs], sv_index, tv)
        right = sum(g == want for g, (_, want) in zip(got, pairs))
        info["heldout_txt_exact_match"] = round(right / len(pairs), 5)
        print("%s: heldout.txt exact match %d/%d" % (name, right, len(pairs)))
        for g, (s, want) in zip(got, pairs):
            if g != want:
                print("   miss: %r -> %s (want %s)" % (s, g, want))
        for s, g in zip(examples, translate(model, examples, sv_index, tv)):
            print("   %-28s -> %s" % (s, g))
    with open(mpath, "w") as f:
        json.dump(metrics, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
