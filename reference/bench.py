#!/usr/bin/python3
"""PyTorch eager decoding timer for `attnx bench` (run with /usr/bin/python3).

  bench.py --checkpoint CKPT --inputs IN.safetensors --steps T --threads N
           [--beam K --eos 2] [--warmup 3] [--min-reps 10] [--min-time 1.0] [--max-reps 1000]

Runs the reference modules (attnx_reference.py): the encoder once, then
exactly T decoder steps, each feeding back argmax(log_probs), with no EOS
stop, so that every engine `attnx bench` compares does the same work.

With --beam K > 1 it times the reference's beam search instead
(attnx_reference.beam_search, spec "Beam search", max_len T, length penalty
1): the whole search, minus the encoder timed alone just before it, is the
decode time; tokens are each row's best hypothesis. (`attnx bench` gives
the model an EOS it never ranks high enough, so every hypothesis runs T
steps.)

Prints one JSON object on stdout:

  {"encoder_ms": [...], "decode_ms": [...], "reps": R, "threads": N,
   "peak_rss_mb": M, "tokens": [[...], ...], "torch": "1.13.1",
   "blas": {"kind": "openblas", "libraries": [...], "build": "BLAS_INFO=generic",
            "openblas_num_threads": "1"}}

encoder_ms and decode_ms hold one wall-clock time per repetition (warm-up
runs excluded); tokens are the first repetition's [batch][T] token ids;
peak_rss_mb is this process's peak resident set (getrusage ru_maxrss).
blas says which BLAS the process computed with: the libraries mapped after
the run (/proc/self/maps: Debian's torch calls whatever the libblas.so.3
alternative points to) classified as openblas, mkl, blis, reference (the
netlib reference BLAS, many times slower) or unknown, and torch's own build
setting (torch.__config__.show()), and OPENBLAS_NUM_THREADS, which
bench.py sets to --threads before torch loads unless it is set already.
User errors print "bench: ..." on stderr and exit 2.

  bench.py --corpus --checkpoint CKPT --inputs IN.safetensors --steps T
           --threads N [--beam K] [--batch-sents 30]
translates every row of IN as a test set, the way OpenNMT-py's translator
batches one: rows sorted by length (longest first) into batches of
--batch-sents sentences, each decoded greedily (a batch stops when every row
has emitted EOS) or with the reference's beam search over the batch's
B*K slots, max_len T; one warm-up batch, then the whole set once, encoder
included. Prints {"seconds": s, "tokens": [[...] per row in input order,
EOS included when emitted], "threads", "torch", "blas", "peak_rss_mb"}.
"""

import argparse
import json
import os
import re
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _pin_blas_threads(argv):
    """OpenBLAS sizes its thread pool from OPENBLAS_NUM_THREADS when it
    loads, and torch.set_num_threads does not reach it in Debian's build
    (BLAS_INFO=generic): set it to --threads before torch loads, unless the
    caller set it, so that "1 thread" means one thread for PyTorch too."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            n = argv[i + 1]
        elif a.startswith("--threads="):
            n = a.split("=", 1)[1]
        else:
            continue
        if n.isdigit() and int(n) >= 1:
            os.environ.setdefault("OPENBLAS_NUM_THREADS", n)


if __name__ == "__main__":
    _pin_blas_threads(sys.argv[1:])

import torch  # noqa: E402

import attnx_reference as ref  # noqa: E402
import toolkits  # noqa: E402
from attnx_reference import ReferenceError  # noqa: E402


@torch.no_grad()
def decode(model, ids, lengths, steps, sos):
    """(encoder seconds, decode seconds, tokens [B, steps])."""
    t0 = time.perf_counter()
    enc, state = model.encoder(ids, lengths)
    t1 = time.perf_counter()
    inp = torch.full((ids.shape[0],), sos, dtype=torch.int64)
    toks = []
    for _ in range(steps):
        lp, state, _ = model.decoder(inp, state, enc, lengths)[:3]
        inp = lp.argmax(dim=1)
        toks.append(inp)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, torch.stack(toks, 1) if toks else torch.zeros(ids.shape[0], 0, dtype=torch.int64)


@torch.no_grad()
def decode_beam(model, ids, lengths, steps, sos, eos, beam):
    """Beam search: (encoder seconds, search seconds minus the encoder's,
    each row's best hypothesis as a list of token lists)."""
    t0 = time.perf_counter()
    model.encoder(ids, lengths)
    t1 = time.perf_counter()
    results = ref.beam_search(model, ids, lengths, beam, steps, sos, eos, 1.0)
    t2 = time.perf_counter()
    return t1 - t0, max(t2 - t1 - (t1 - t0), 0.0), [hyps[0].tokens for hyps in results]


def bench(model, ids, lengths, steps, sos=ref.SOS_ID, warmup=3, min_reps=10, min_time=1.0, max_reps=1000,
          beam=1, eos=ref.EOS_ID):
    """Times decode() (beam > 1: decode_beam()) repeatedly: the result dict
    of the CLI, without RSS."""
    if steps < 1:
        raise ReferenceError("--steps %d, want >= 1" % steps)
    if beam < 1:
        raise ReferenceError("--beam %d, want >= 1" % beam)
    ref.check_lengths(lengths, ids.shape[1])

    def run():
        if beam > 1:
            return decode_beam(model, ids, lengths, steps, sos, eos, beam)
        e, d, toks = decode(model, ids, lengths, steps, sos)
        return e, d, toks.tolist()

    for _ in range(warmup):
        run()
    enc_ms, dec_ms, tokens = [], [], None
    start = time.perf_counter()
    while len(dec_ms) < max_reps and (len(dec_ms) < min_reps or time.perf_counter() - start < min_time):
        e, d, toks = run()
        enc_ms.append(e * 1e3)
        dec_ms.append(d * 1e3)
        if tokens is None:
            tokens = toks
    return {"encoder_ms": enc_ms, "decode_ms": dec_ms, "reps": len(dec_ms), "tokens": tokens}


@torch.no_grad()
def corpus(model, ids, lengths, steps, sos, eos, beam, batch_sents):
    """Translates every row (see the module docstring): (seconds, tokens)."""
    order = sorted(range(ids.shape[0]), key=lambda i: -int(lengths[i]))
    batches = [order[i:i + batch_sents] for i in range(0, len(order), batch_sents)]

    def run(rows):
        sel = torch.tensor(rows, dtype=torch.int64)
        L = int(lengths[sel].max())
        src, lens = ids[sel, :L], lengths[sel]
        if beam > 1:
            return [hyps[0].tokens for hyps in ref.beam_search(model, src, lens, beam, steps, sos, eos, 1.0)]
        enc, state = model.encoder(src, lens)
        inp = torch.full((len(rows),), sos, dtype=torch.int64)
        out = [[] for _ in rows]
        ended = torch.zeros(len(rows), dtype=torch.bool)
        for _ in range(steps):
            lp, state, _ = model.decoder(inp, state, enc, lens)[:3]
            inp = lp.argmax(dim=1)
            for r in (~ended).nonzero().flatten().tolist():
                out[r].append(int(inp[r]))
            ended |= inp == eos
            if bool(ended.all()):
                break
        return out

    run(batches[0])  # warm-up
    tokens = [None] * ids.shape[0]
    t0 = time.perf_counter()
    for b in batches:
        for r, toks in zip(b, run(b)):
            tokens[r] = toks
    return time.perf_counter() - t0, tokens


def blas_info():
    """Which BLAS this process loaded (see the module docstring)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path).lower()
                if "blas" in name or "mkl" in name or "blis" in name:
                    libs.add(path)
    except OSError:
        pass
    joined = " ".join(sorted(libs)).lower()
    if "openblas" in joined:
        kind = "openblas"
    elif "mkl" in joined:
        kind = "mkl"
    elif "blis" in joined:
        kind = "blis"
    elif "/blas/" in joined or "libblas.so" in joined:
        kind = "reference"
    else:
        kind = "unknown"
    m = re.search(r"BLAS_INFO=[^,\s]*", torch.__config__.show())
    build = m.group(0) if m else ""
    return {"kind": kind, "libraries": sorted(libs), "build": build,
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", "")}


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--inputs", required=True, help="safetensors with source_ids [B,S] and source_lengths [B]")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--sos", type=int, default=ref.SOS_ID)
    p.add_argument("--eos", type=int, default=ref.EOS_ID, help="beam search's EOS")
    p.add_argument("--beam", type=int, default=1, help="K > 1: time the reference's beam search of width K")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--min-reps", type=int, default=10)
    p.add_argument("--min-time", type=float, default=1.0, help="seconds")
    p.add_argument("--max-reps", type=int, default=1000)
    p.add_argument("--corpus", action="store_true", help="translate the inputs as a test set (see above)")
    p.add_argument("--batch-sents", type=int, default=30, help="--corpus: sentences per batch")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        if a.threads < 1:
            raise ReferenceError("--threads %d, want >= 1" % a.threads)
        torch.set_num_threads(a.threads)
        torch.set_num_interop_threads(1)
        model = toolkits.load_model(a.checkpoint).eval()
        tensors, _ = ref.read_safetensors(a.inputs)
        for k in ("source_ids", "source_lengths"):
            if k not in tensors:
                raise ReferenceError("%s lacks tensor %s" % (a.inputs, k))
        ids, lengths = tensors["source_ids"].to(torch.int64), tensors["source_lengths"].to(torch.int64)
        if a.corpus:
            if a.batch_sents < 1:
                raise ReferenceError("--batch-sents %d, want >= 1" % a.batch_sents)
            secs, toks = corpus(model, ids, lengths, a.steps, a.sos, a.eos, a.beam, a.batch_sents)
            out = {"seconds": secs, "tokens": toks}
        else:
            out = bench(model, ids, lengths, a.steps, a.sos, a.warmup, a.min_reps, a.min_time, a.max_reps, a.beam, a.eos)
    except (ReferenceError, OSError) as e:
        print("bench: %s" % e, file=sys.stderr)
        return 2
    out["threads"] = torch.get_num_threads()
    out["torch"] = torch.__version__
    out["blas"] = blas_info()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
