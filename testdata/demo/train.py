"""Train the demo date-normalisation models with the reference modules.

    /usr/bin/python3 testdata/demo/train.py --arch bahdanau --out testdata/demo/bahdanau.pt
    /usr/bin/python3 testdata/demo/train.py --arch luong-general --out testdata/demo/luong.pt
    /usr/bin/python3 testdata/demo/train.py --write-data   # vocabularies, examples, held-out set

Teacher forcing, Adam, ragged source lengths through source_lengths, H=64,
L=1. Held-out accuracy is exact match of greedy decoding (EOS stop) on dates
never seen in training. Results are merged into metrics.json.
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
import attnx_reference as ref  # noqa: E402

SEED = 20210303
N_TRAIN = 60000
N_HELDOUT_EVAL = 2000
N_HELDOUT_FILE = 200


def vocabs():
    sv, tv = dates.source_vocab(), dates.target_vocab()
    return sv, tv, {t: i for i, t in enumerate(sv)}, {t: i for i, t in enumerate(tv)}


def batchify(pairs, s_index, t_index):
    """(source_ids [B,S], lengths [B], decoder inputs [T,B], targets [T,B])."""
    srcs = [dates.encode(s, s_index) for s, _ in pairs]
    S = max(len(x) for x in srcs)
    ids = torch.full((len(pairs), S), ref.PAD_ID, dtype=torch.int64)
    for i, x in enumerate(srcs):
        ids[i, :len(x)] = torch.tensor(x)
    lengths = torch.tensor([len(x) for x in srcs])
    tgt = torch.tensor([dates.encode(t, t_index) + [ref.EOS_ID] for _, t in pairs]).t()  # T x B
    dec_in = torch.cat([torch.full((1, len(pairs)), ref.SOS_ID, dtype=torch.int64), tgt[:-1]], 0)
    return ids, lengths, dec_in, tgt


def loss_on(model, ids, lengths, dec_in, tgt):
    enc, state = model.encoder(ids, lengths)
    total = 0.0
    for t in range(dec_in.shape[0]):
        lp, state, _ = model.decoder(dec_in[t], state, enc, lengths)
        total = total + F.nll_loss(lp, tgt[t])
    return total / dec_in.shape[0]


@torch.no_grad()
def accuracy(model, pairs, s_index, tv, batch=500):
    model.eval()
    right = 0
    for i in range(0, len(pairs), batch):
        chunk = pairs[i:i + batch]
        ids, lengths, _, _ = batchify(chunk, s_index, {t: j for j, t in enumerate(tv)})
        toks, lens = ref.greedy_decode(model, ids, lengths, max_len=12)
        for j, (_, want) in enumerate(chunk):
            row = toks[j, :lens[j]].tolist()
            if row and row[-1] == ref.EOS_ID:
                row = row[:-1]
            got = "".join(tv[k] if k >= 4 else "?" for k in row)
            right += got == want
    model.train()
    return right / len(pairs)


def write_data(out_dir):
    sv, tv, _, _ = vocabs()
    with open(os.path.join(out_dir, "src_vocab.json"), "w") as f:
        json.dump(sv, f, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out_dir, "tgt_vocab.json"), "w") as f:
        json.dump(tv, f)
        f.write("\n")
    _, held = dates.split_dates(SEED)
    with open(os.path.join(out_dir, "heldout.txt"), "w") as f:
        for s, t in dates.examples(held, N_HELDOUT_FILE, SEED + 2):
            f.write("%s\t%s\n" % (s, t))
    ex = ["3rd of March 2021", "Mar 3, 21", "03/03/2021", "March 3rd, 2021", "3 mar 2021",
          "2021/3/3", "Wednesday, March 3, 2021", "the 14th of july, 1989", "12.10.49",
          "SAT 1 JAN 2000"]
    with open(os.path.join(out_dir, "examples.txt"), "w") as f:
        f.write("\n".join(ex) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="bahdanau", choices=ref.ARCHS)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--time-budget", type=float, default=0,
                    help="CPU seconds of this process; when > 0 the LR schedule follows CPU time used "
                         "and training stops at the budget (the machine is shared: wall time varies)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--name", default=None, help="key in metrics.json (default: file stem of --out)")
    ap.add_argument("--write-data", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.write_data:
        write_data(HERE)
        return
    sv, tv, s_index, t_index = vocabs()
    train_dates, held_dates = dates.split_dates(SEED)
    train = dates.examples(train_dates, N_TRAIN, SEED)
    held = dates.examples(held_dates, N_HELDOUT_EVAL, SEED + 1)
    torch.manual_seed(SEED)
    model = ref.build_model(args.arch, args.hidden, 1, len(sv), len(tv))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    t0 = time.time()
    c0 = time.process_time()

    def progress(s):
        if args.time_budget > 0:
            return min(1.0, (time.process_time() - c0) / args.time_budget)
        return min(s, args.steps) / args.steps

    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * progress(s))) + 0.02)
    gen = torch.Generator().manual_seed(SEED)
    steps_done = 0
    for step in range(args.steps):
        if args.time_budget > 0 and time.process_time() - c0 >= args.time_budget:
            break
        steps_done = step + 1
        idx = torch.randint(len(train), (args.batch,), generator=gen).tolist()
        batch = batchify([train[i] for i in idx], s_index, t_index)
        loss = loss_on(model, *batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == args.steps - 1:
            msg = "step %d loss %.4f wall %.0fs cpu %.0fs" % (step, loss.item(), time.time() - t0,
                                                              time.process_time() - c0)
            if step % 500 == 0 and step:
                msg += " heldout-acc(500) %.4f" % accuracy(model, held[:500], s_index, tv)
            print(msg, flush=True)
    train_s = time.time() - t0
    train_cpu = time.process_time() - c0
    model.eval()
    acc = accuracy(model, held, s_index, tv)
    print("final held-out exact match %.4f on %d (train %.0fs wall, %.0fs cpu)" % (acc, len(held), train_s, train_cpu),
          flush=True)
    out = args.out or os.path.join(HERE, args.arch + ".pt")
    ref.save_model(model, out, "pt")
    name = args.name or os.path.splitext(os.path.basename(out))[0]
    mpath = os.path.join(HERE, "metrics.json")
    metrics = {}
    if os.path.exists(mpath):
        with open(mpath) as f:
            metrics = json.load(f)
    metrics.setdefault("models", {})[name] = {
        "file": os.path.basename(out), "arch": args.arch, "hidden": args.hidden, "layers": 1,
        "src_vocab": len(sv), "tgt_vocab": len(tv), "heldout_exact_match": round(acc, 5),
        "heldout_examples": len(held), "train_steps": steps_done, "time_budget_s": args.time_budget, "batch": args.batch,
        "lr": args.lr, "train_seconds_wall": round(train_s, 1), "train_seconds_cpu": round(train_cpu, 1), "threads": args.threads,
        "final_loss": round(loss.item(), 5),
    }
    metrics.update({"seed": SEED, "train_examples": N_TRAIN, "heldout_fraction_of_dates": dates.HELDOUT_FRACTION,
                    "date_range": [dates.FIRST.isoformat(), dates.LAST.isoformat()],
                    "decoding": "greedy, sos=1 eos=2 pad=0, max_len 12"})
    with open(mpath, "w") as f:
        json.dump(metrics, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
