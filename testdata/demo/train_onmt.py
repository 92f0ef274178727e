"""Train the demo's OpenNMT-py-shaped model on the date task and save it the
way OpenNMT-py 3 saves a checkpoint: a bidirectional 2-layer LSTM encoder,
a 2-layer input-feeding decoder with general attention (OpenNMT-py's RNN
recipe, small), the reference's own implementation (reference/toolkits.py).

    /usr/bin/python3 testdata/demo/train_onmt.py --out testdata/demo/onmt_dates.pt

OpenNMT-py's conventions: vocabularies with <unk> 0, <blank> 1, <s> 2,
</s> 3 first, sources without <s>/</s>, decoding from <s> to </s>.
Held-out accuracy is exact match of greedy decoding on dates never seen in
training; it is merged into metrics.json.

With --spm the model is trained on SentencePiece pieces instead of
characters, as OpenNMT-py's sentencepiece transform feeds it: a unigram
model for the sources and a BPE model for the ISO dates, trained here
(python3-sentencepiece) and written beside the checkpoint as
onmt_dates_spm.src.model and onmt_dates_spm.tgt.model:

    /usr/bin/python3 testdata/demo/train_onmt.py --spm --out testdata/demo/onmt_dates_spm.pt
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
import dates  # noqa: E402
import toolkits  # noqa: E402

SEED = 20210303
SPECIALS = ["<unk>", "<blank>", "<s>", "</s>"]
UNK, PAD, BOS, EOS = 0, 1, 2, 3


class Chars:
    """Character-level tokens (the default)."""

    def __init__(self, train):
        self.src_tokens = dates.source_chars()
        self.tgt_tokens = list("0123456789-")

    def src(self, s):
        return list(s)

    def tgt(self, t):
        return list(t)

    def detok(self, pieces):
        return "".join(pieces)


class Pieces:
    """SentencePiece pieces: a unigram model for the sources and a BPE
    model for the targets, trained on the training pairs."""

    def __init__(self, train, prefix):
        import sentencepiece as spm
        for side, texts, kind, size in (("src", [s for s, _ in train], "unigram", 160), ("tgt", [t for _, t in train], "bpe", 60)):
            spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix="%s.%s" % (prefix, side),
                                           model_type=kind, vocab_size=size, character_coverage=1.0,
                                           num_threads=1, minloglevel=2, seed_sentencepiece_size=100000)
            os.remove("%s.%s.vocab" % (prefix, side))
        self.sp_src = spm.SentencePieceProcessor(model_file=prefix + ".src.model")
        self.sp_tgt = spm.SentencePieceProcessor(model_file=prefix + ".tgt.model")
        # the vocabularies: the specials, then every ordinary piece (the
        # SentencePiece models' own <unk>, <s>, </s> are ids 0-2)
        self.src_tokens = [self.sp_src.id_to_piece(i) for i in range(3, self.sp_src.get_piece_size())]
        self.tgt_tokens = [self.sp_tgt.id_to_piece(i) for i in range(3, self.sp_tgt.get_piece_size())]

    def src(self, s):
        return self.sp_src.encode(s, out_type=str)

    def tgt(self, t):
        return self.sp_tgt.encode(t, out_type=str)

    def detok(self, pieces):
        return self.sp_tgt.decode_pieces(pieces)


def vocabs(tok):
    src = SPECIALS + tok.src_tokens
    tgt = SPECIALS + tok.tgt_tokens
    return src, tgt, {t: i for i, t in enumerate(src)}, {t: i for i, t in enumerate(tgt)}


def batchify(pairs, s_index, t_index, tok):
    srcs = [[s_index.get(c, UNK) for c in tok.src(s)] for s, _ in pairs]
    S = max(len(x) for x in srcs)
    ids = torch.full((len(pairs), S), PAD, dtype=torch.int64)
    for i, x in enumerate(srcs):
        ids[i, :len(x)] = torch.tensor(x)
    lengths = torch.tensor([len(x) for x in srcs])
    tgts = [[t_index.get(c, UNK) for c in tok.tgt(t)] + [EOS] for _, t in pairs]
    T = max(len(x) for x in tgts)
    tgt = torch.tensor([x + [PAD] * (T - len(x)) for x in tgts]).t()
    dec_in = torch.cat([torch.full((1, len(pairs)), BOS, dtype=torch.int64), tgt[:-1]], 0)
    return ids, lengths, dec_in, tgt


def loss_on(model, ids, lengths, dec_in, tgt):
    enc, state = model.encode(ids, lengths)
    total = 0.0
    for t in range(dec_in.shape[0]):
        lp, state, _ = model.step(dec_in[t], state, enc, lengths)
        total = total + F.nll_loss(lp, tgt[t], ignore_index=PAD)
    return total / dec_in.shape[0]


@torch.no_grad()
def accuracy(model, pairs, s_index, t_index, tv, tok, batch=500):
    right = 0
    for i in range(0, len(pairs), batch):
        chunk = pairs[i:i + batch]
        ids, lengths, _, _ = batchify(chunk, s_index, t_index, tok)
        enc, state = model.encode(ids, lengths)
        inp = torch.full((len(chunk),), BOS, dtype=torch.int64)
        out = []
        for _ in range(12):
            lp, state, _ = model.step(inp, state, enc, lengths)
            inp = lp.argmax(1)
            out.append(inp)
        rows = torch.stack(out, 1).tolist()
        for j, (_, want) in enumerate(chunk):
            row = rows[j]
            row = row[:row.index(EOS)] if EOS in row else row
            right += tok.detok([tv[k] if k >= 4 else "?" for k in row]) == want
    return right / len(pairs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=64, help="H (each encoder direction has H/2)")
    ap.add_argument("--embedding", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--time-budget", type=float, default=0, help="CPU seconds; when > 0 training stops there")
    ap.add_argument("--out", default=os.path.join(HERE, "onmt_dates.pt"))
    ap.add_argument("--spm", action="store_true", help="train on SentencePiece pieces (models written beside --out)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    train_dates, held_dates = dates.split_dates(SEED)
    train = dates.examples(train_dates, 60000, SEED)
    held = dates.examples(held_dates, 2000, SEED + 1)
    tok = Pieces(train, os.path.splitext(args.out)[0]) if args.spm else Chars(train)
    sv, tv, s_index, t_index = vocabs(tok)
    torch.manual_seed(SEED)
    cfg = {"arch": "onmt-general", "cell": "lstm", "hidden_size": args.hidden, "embedding_size": args.embedding,
           "num_layers": args.layers, "src_vocab_size": len(sv), "tgt_vocab_size": len(tv), "bidirectional": True,
           "encoder_hidden_size": args.hidden // 2, "input_feed": True}
    model = toolkits.build(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    c0, t0 = time.process_time(), time.time()

    def progress(s):
        if args.time_budget > 0:
            return min(1.0, (time.process_time() - c0) / args.time_budget)
        return min(s, args.steps) / args.steps

    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * progress(s))) + 0.02)
    gen = torch.Generator().manual_seed(SEED)
    steps_done = 0
    model.train()
    for step in range(args.steps):
        if args.time_budget > 0 and time.process_time() - c0 >= args.time_budget:
            break
        steps_done = step + 1
        idx = torch.randint(len(train), (args.batch,), generator=gen).tolist()
        loss = loss_on(model, *batchify([train[i] for i in idx], s_index, t_index, tok))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0:
            print("step %d loss %.4f cpu %.0fs" % (step, loss.item(), time.process_time() - c0), flush=True)
    model.eval()
    acc = accuracy(model, held, s_index, t_index, tv, tok)
    print("final held-out exact match %.4f on %d" % (acc, len(held)), flush=True)
    extra = None
    if args.spm:
        # as OpenNMT-py records its sentencepiece transform; the paths are
        # the training's, and attnx export finds the files beside the
        # checkpoint by their names
        base = os.path.splitext(os.path.basename(args.out))[0]
        extra = {"transforms": ["sentencepiece"], "src_subword_model": "data/%s.src.model" % base,
                 "tgt_subword_model": "data/%s.tgt.model" % base}
    toolkits.save_onmt_v3(model, args.out, sv, tv, opt_extra=extra)
    mpath = os.path.join(HERE, "metrics.json")
    metrics = json.load(open(mpath)) if os.path.exists(mpath) else {}
    metrics.setdefault("models", {})[os.path.splitext(os.path.basename(args.out))[0]] = {
        "file": os.path.basename(args.out), "arch": "onmt-general", "format": "OpenNMT-py 3 checkpoint (reference/toolkits.py save_onmt_v3)",
        "hidden": args.hidden, "embedding": args.embedding, "layers": args.layers, "encoder": "bidirectional LSTM, H/2 per direction",
        "input_feed": True, "tokens": "SentencePiece pieces (unigram sources, BPE targets)" if args.spm else "characters", "src_vocab": len(sv), "tgt_vocab": len(tv), "heldout_exact_match": round(acc, 5),
        "heldout_examples": len(held), "train_steps": steps_done, "time_budget_s": args.time_budget, "batch": args.batch,
        "lr": args.lr, "train_seconds_wall": round(time.time() - t0, 1), "train_seconds_cpu": round(time.process_time() - c0, 1),
        "threads": args.threads, "final_loss": round(loss.item(), 5)}
    with open(mpath, "w") as f:
        json.dump(metrics, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
