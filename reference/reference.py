#!/usr/bin/python3
"""attnx PyTorch reference CLI (used by the Go tests and by `attnx verify`).

Tensors are exchanged as safetensors files. Run with /usr/bin/python3.

  make-model    --arch A --hidden H --layers L --src-vocab Vs --tgt-vocab Vt --seed N --out PATH
                [--cell lstm|gru] [--embedding-size E] [--max-length M] [--format pt|safetensors] [--std 0.5]
  random-inputs --batch B --src-len S --src-vocab Vs --seed N [--ragged] --out IN.safetensors
  run           --checkpoint CKPT --inputs IN.safetensors --steps T --out OUT.safetensors [--sos 1 --eos 2 --pad 0 --max-len N]
  beam          --checkpoint CKPT --inputs IN.safetensors --beam K --max-len T --out OUT.safetensors
                [--n-best N] [--length-penalty A] [--sos 1 --eos 2 --pad 0]
  export-onnx   --checkpoint CKPT --out-dir DIR [--opset 17]
  run-module    --module FILE.py --checkpoint W.safetensors --config JSON --inputs IN.safetensors --steps T --out OUT.safetensors
                [--pad 0]   (what run writes, computed by FILE.py's own modules: see user_module.py)
  batch         JOBS.json   (a JSON array of argument lists: each runs as one of the above, in this process)

Architectures: bahdanau, luong-dot, luong-general, luong-concat (the
article's; cell lstm or gru), tutorial-location, tutorial-bahdanau (PyTorch's
seq2seq tutorial, 2017-2023 and current; gru). A checkpoint's architecture,
cell, sizes and M follow from its keys.

Checkpoints are read as safetensors, or as torch.save zip archives with
torch.load(weights_only=True); `attnx verify` passes safetensors only.

`run` writes: encoder_outputs [B,S,H], hidden [L,B,H], cell [L,B,H] (LSTM
only), step_input_ids [T,B], log_probs [T,B,Vt], next_hidden [T,L,B,H],
next_cell [T,L,B,H] (LSTM only), attention [T,B,S], tokens [T,B] (argmax per
step), greedy_tokens [B,max_len] (padded with --pad), greedy_lengths [B].

`beam` writes (N = --n-best, default K; spec "Beam search"):
  beam_tokens            int64   [B,N,max_len]  each hypothesis's tokens (EOS included when finished), padded with --pad
  beam_lengths           int64   [B,N]          its length (0 for a missing hypothesis)
  beam_scores            float32 [B,N]          raw score: the float32 sum of its log_probs in step order (-inf if missing)
  beam_normalized_scores float32 [B,N]          float32(score / length ** alpha), computed in float64 (-inf if missing)
  beam_counts            int64   [B]            hypotheses present (N unless the vocabulary ran out)
Hypotheses are in the final order: normalised score descending, ties in
insertion order; the first is the translation.

User errors print "reference: ..." on stderr and exit 2.
"""

import argparse
import copy
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import attnx_reference as ref  # noqa: E402
import toolkits  # noqa: E402
from attnx_reference import ReferenceError  # noqa: E402

torch.set_num_threads(1)  # determinism and a fair share of a small machine


def _int_tensor(tensors, name, path, dims):
    if name not in tensors:
        raise ReferenceError("%s lacks tensor %s" % (path, name))
    t = tensors[name]
    if t.dtype not in (torch.int64, torch.int32):
        raise ReferenceError("%s: %s has dtype %s, want int64" % (path, name, t.dtype))
    if t.dim() != dims:
        raise ReferenceError("%s: %s has shape %s, want %d dimensions" % (path, name, list(t.shape), dims))
    return t.to(torch.int64)


def cmd_make_model(a):
    kw = {"cell": a.cell, "embedding_size": a.embedding_size}
    if a.arch == "tutorial-location":
        kw["max_length"] = ref.TUTORIAL_MAX_LENGTH if a.max_length is None else a.max_length
    elif a.max_length is not None:
        raise ReferenceError("--max-length is for tutorial-location only, not %s" % a.arch)
    model = ref.make_model(a.arch, a.hidden, a.layers, a.src_vocab, a.tgt_vocab, a.seed, a.std, **kw)
    _parent(a.out)
    ref.save_model(model, a.out, a.format)


TOOLKIT_FORMATS = ("onmt-v3", "onmt-v3-safetensors", "onmt-v2", "joey", "bentrevett-2018", "bentrevett-2019",
                   "bentrevett-2020", "bentrevett-2023", "chatbot", "fairseq")


def reference_stem(out):
    """The path, without extension, of make-toolkit's record of a model
    saved at out: out without its extension, plus _reference."""
    return os.path.splitext(out.rstrip("/"))[0] + "_reference"


def cmd_make_toolkit(a):
    import toolkits
    try:
        cfg = json.loads(a.config)
    except ValueError as e:
        raise ReferenceError("--config: %s" % e)
    try:
        model = toolkits.randomize(toolkits.build(cfg), a.seed, a.std).eval()
    except (toolkits.ToolkitError, KeyError) as e:
        raise ReferenceError("--config: %s" % e)
    words = json.loads(a.words) if a.words else None
    s = model.sz

    def vocab(n, side, specials):
        ws = list(words or [])
        ws += ["%s%d" % (side, i) for i in range(n)]
        return (specials + [w for w in ws if w not in specials])[:n]
    _parent(a.out)
    f = a.format
    if f.startswith("onmt-"):
        v = 2 if f == "onmt-v2" else 3
        src = vocab(s.Vs, "w", ["<unk>", "<blank>"] + (["<s>", "</s>"] if v == 3 else []))
        tgt = vocab(s.Vt, "t", ["<unk>", "<blank>", "<s>", "</s>"])
        if f == "onmt-v2":
            toolkits.save_onmt_v2(model, a.out, src, tgt)
        else:
            toolkits.save_onmt_v3(model, a.out, src, tgt, 100 if f == "onmt-v3-safetensors" else None)
    elif f == "joey":
        specials = ["<unk>", "<pad>", "<s>", "</s>"]
        src, tgt = vocab(s.Vs, "w", specials), vocab(s.Vt, "t", specials)
        toolkits.save_joey(model, a.out, src, tgt, version=a.joey_version, scale=bool(cfg.get("src_embedding_scale")))
    elif f == "fairseq":
        specials = ["<s>", "<pad>", "</s>", "<unk>"]
        src, tgt = vocab(s.Vs, "w", specials), vocab(s.Vt, "t", specials)
        toolkits.save_fairseq(model, a.out, src, tgt)
    elif f.startswith("bentrevett-"):
        specials = ["<unk>", "<pad>", "<sos>", "<eos>"]
        src, tgt = vocab(s.Vs, "w", specials), vocab(s.Vt, "t", specials)
        toolkits.save_bentrevett(model, a.out, f.split("-", 1)[1])
    else:
        src = ["PAD", "SOS", "EOS"] + vocab(s.Vs - 3, "w", [])
        tgt = src
        toolkits.save_chatbot(model, a.out, src[3:])
    # The reference's own record of the model, for toolkit-decode: its
    # configuration, weights and vocabularies, read back without unpickling
    # the toolkit's file.
    # Named apart from every file a toolkit's reader looks for beside its
    # checkpoint (OpenNMT-py's <base>.*.safetensors among them).
    stem = reference_stem(a.out)
    side = stem + ".json"
    ref.write_safetensors(stem + ".safetensors", {k: v.contiguous() for k, v in model.state_dict().items()},
                          {ref.CONFIG_METADATA: json.dumps(cfg)})
    with open(side, "w") as fh:
        json.dump({"config": cfg, "src_vocab": src, "tgt_vocab": tgt, "joey_version": a.joey_version}, fh)


def cmd_toolkit_decode(a):
    import toolkits
    with open(a.model) as fh:
        side = json.load(fh)
    state, _ = ref.read_safetensors(a.model[:-len(".json")] + ".safetensors")
    model = toolkits.build(side["config"])
    model.load_state_dict(state)
    model.eval()
    try:
        texts = json.loads(a.texts)
    except ValueError as e:
        raise ReferenceError("--texts: %s" % e)
    out = [toolkits.toolkit_decode(model, t, side["src_vocab"], side["tgt_vocab"], a.max_len, side.get("joey_version", "2.3.0"))
           for t in texts]
    with open(a.out, "w") as fh:
        json.dump(out, fh)


def random_inputs(batch, src_len, src_vocab, seed, ragged):
    """source_ids [B,S] (ids avoid 0..3 when the vocabulary allows; PAD past each
    length) and source_lengths [B] (ragged: in [1,S], one row full length)."""
    if batch < 1 or src_len < 1 or src_vocab < 1:
        raise ReferenceError("batch, src-len and src-vocab must be >= 1 (got %d, %d, %d)"
                             % (batch, src_len, src_vocab))
    g = torch.Generator().manual_seed(int(seed))
    low = 4 if src_vocab > 4 else 0
    ids = torch.randint(low, src_vocab, (batch, src_len), generator=g, dtype=torch.int64)
    if ragged:
        lengths = torch.randint(1, src_len + 1, (batch,), generator=g, dtype=torch.int64)
        full = int(torch.randint(0, batch, (1,), generator=g))
        lengths[full] = src_len
    else:
        lengths = torch.full((batch,), src_len, dtype=torch.int64)
    for i, n in enumerate(lengths.tolist()):
        ids[i, n:] = ref.PAD_ID
    return {"source_ids": ids, "source_lengths": lengths}


def cmd_random_inputs(a):
    t = random_inputs(a.batch, a.src_len, a.src_vocab, a.seed, a.ragged)
    _parent(a.out)
    ref.write_safetensors(a.out, t)


def check_inputs(model, source_ids, source_lengths, sos, eos, pad):
    """The checks every subcommand makes on its inputs and special tokens."""
    B, S = source_ids.shape
    cfg = model.config
    if B < 1 or S < 1:
        raise ReferenceError("source_ids has shape %s, want [batch>=1, src_len>=1]" % list(source_ids.shape))
    if tuple(source_lengths.shape) != (B,):
        raise ReferenceError("source_lengths has shape %s, want [%d] (one per row of source_ids)"
                             % (list(source_lengths.shape), B))
    ref.check_lengths(source_lengths, S)
    lo, hi = int(source_ids.min()), int(source_ids.max())
    if lo < 0 or hi >= cfg["src_vocab"]:
        raise ReferenceError("source_ids hold values in [%d, %d], want [0, %d) (source vocabulary)"
                             % (lo, hi, cfg["src_vocab"]))
    if "max_length" in cfg and S > cfg["max_length"]:
        raise ReferenceError("src_len %d exceeds the tutorial-location decoder's max_length M = %d"
                             % (S, cfg["max_length"]))
    for name, v in (("sos", sos), ("eos", eos), ("pad", pad)):
        if not 0 <= v < cfg["tgt_vocab"]:
            raise ReferenceError("--%s %d is outside the target vocabulary [0, %d)" % (name, v, cfg["tgt_vocab"]))


def _contiguous(out):
    return {k: (v.to(torch.float32) if v.is_floating_point() else v.to(torch.int64)).contiguous()
            for k, v in out.items()}


def run(model, source_ids, source_lengths, steps, step_input_ids=None, sos=1, eos=2, pad=0, max_len=None, rules=None):
    """All outputs of the `run` subcommand, as a dict of tensors."""
    B = source_ids.shape[0]
    cfg = model.config
    check_inputs(model, source_ids, source_lengths, sos, eos, pad)
    if step_input_ids is not None:
        if tuple(step_input_ids.shape) != (steps, B):
            raise ReferenceError("step_input_ids has shape %s, want [steps=%d, batch=%d]"
                                 % (list(step_input_ids.shape), steps, B))
        if steps and (int(step_input_ids.min()) < 0 or int(step_input_ids.max()) >= cfg["tgt_vocab"]):
            raise ReferenceError("step_input_ids hold values outside the target vocabulary [0, %d)" % cfg["tgt_vocab"])
    if steps < 0:
        raise ReferenceError("--steps %d, want >= 0" % steps)
    out = ref.run_steps(model, source_ids, source_lengths, steps, sos=sos, step_input_ids=step_input_ids)
    if max_len is None:
        max_len = steps
    if max_len < 0:
        raise ReferenceError("--max-len %d, want >= 0" % max_len)
    toks, lens = ref.greedy_decode(model, source_ids, source_lengths, sos=sos, eos=eos, max_len=max_len, pad=pad, rules=rules)
    out["greedy_tokens"] = toks
    out["greedy_lengths"] = lens
    return _contiguous(out)


def beam(model, source_ids, source_lengths, k, max_len, n_best=None, alpha=1.0, sos=1, eos=2, pad=0, rules=None,
         search="spec", onmt_penalty="avg", unk=0):
    """The outputs of the `beam` subcommand, as a dict of tensors."""
    check_inputs(model, source_ids, source_lengths, sos, eos, pad)
    if k < 1:
        raise ReferenceError("--beam %d, want >= 1" % k)
    N = k if n_best is None else n_best
    if not 1 <= N <= k:
        raise ReferenceError("--n-best %d, want 1 <= N <= beam %d" % (N, k))
    if max_len < 1:
        raise ReferenceError("--max-len %d, want >= 1" % max_len)
    if search not in ("spec", "opennmt", "joeynmt", "fairseq"):
        raise ReferenceError("--search %r, want spec, opennmt, joeynmt or fairseq" % search)
    results = ref.beam_search(model, source_ids, source_lengths, k, max_len, sos, eos, alpha, rules,
                              search=search, n_best=N, onmt_penalty=onmt_penalty, unk=unk)
    B = len(results)
    tokens = torch.full((B, N, max_len), pad, dtype=torch.int64)
    lengths = torch.zeros(B, N, dtype=torch.int64)
    scores = torch.full((B, N), float("-inf"), dtype=torch.float32)
    normalized = torch.full((B, N), float("-inf"), dtype=torch.float32)
    counts = torch.zeros(B, dtype=torch.int64)
    for b, hyps in enumerate(results):
        hyps = hyps[:N]
        counts[b] = len(hyps)
        for j, h in enumerate(hyps):
            tokens[b, j, :len(h.tokens)] = torch.tensor(h.tokens, dtype=torch.int64)
            lengths[b, j] = len(h.tokens)
            scores[b, j] = h.score
            normalized[b, j] = h.normalized
    return _contiguous({"beam_tokens": tokens, "beam_lengths": lengths, "beam_scores": scores,
                        "beam_normalized_scores": normalized, "beam_counts": counts})


@torch.no_grad()
def rounding(model, source_ids, source_lengths, out):
    """PyTorch's own float32 rounding error per element of a `run` output:
    |float32 result - float64 result| of the same computation on the same
    inputs, the encoder on the ids and every decoder step on the float32
    run's own inputs for that step (its step_input_ids, its states of the
    step before, its encoder_outputs), as the step-isolated comparison
    feeds them. Keys are rounding_<output>, float32 like the outputs."""
    m64 = model.double() if isinstance(model, toolkits.Reference) else copy.deepcopy(model).double()
    enc64, state64 = m64.encoder(source_ids, source_lengths)
    names = ref.state_names(model, state64)
    res = {"rounding_encoder_outputs": _err(out["encoder_outputs"].double(), enc64)}
    for name, st in zip(names, state64):
        res["rounding_" + name] = _err(out[name].double(), st)
    enc = out["encoder_outputs"].double()
    per = {"log_probs": [], "attention": []}
    per.update({"next_" + n: [] for n in names})
    for t in range(out["step_input_ids"].shape[0]):
        if t == 0:
            state = tuple(out[n].double() for n in names)
        else:
            state = tuple(out["next_" + n][t - 1].double() for n in names)
        res64 = m64.decoder(out["step_input_ids"][t], state, enc, source_lengths)
        lp, nstate, attn = res64[:3]
        if len(res64) > 3:  # a copy-attention model's copy_probs
            per.setdefault("copy_probs", []).append(_err(out["copy_probs"][t].double(), res64[3]))
        per["log_probs"].append(_err(out["log_probs"][t].double(), lp))
        for n, st in zip(names, nstate):
            per["next_" + n].append(_err(out["next_" + n][t].double(), st))
        per["attention"].append(_err(out["attention"][t].double(), attn))
    for name, xs in per.items():
        if xs:
            res["rounding_" + name] = torch.stack(xs)
    return res


def _err(a, b):
    """|a - b|, 0 where they are equal (equal infinities: a copy
    generator's -inf padding logit)."""
    return torch.where(a == b, torch.zeros_like(a), (a - b).abs())


def _read_inputs(path):
    if not os.path.exists(path):
        raise ReferenceError("inputs %s does not exist" % path)
    tensors, _ = ref.read_safetensors(path)
    ids = _int_tensor(tensors, "source_ids", path, 2)
    lengths = _int_tensor(tensors, "source_lengths", path, 1)
    return tensors, ids, lengths


def _rules(a):
    if not getattr(a, "rules", None):
        return None
    try:
        r = json.loads(a.rules)
    except ValueError as e:
        raise ReferenceError("--rules: %s" % e)
    if not isinstance(r, dict):
        raise ReferenceError("--rules: want a JSON object (attnx.json's decoding)")
    return r


def cmd_run(a):
    model = toolkits.load_model(a.checkpoint)
    tensors, ids, lengths = _read_inputs(a.inputs)
    step_ids = _int_tensor(tensors, "step_input_ids", a.inputs, 2) if "step_input_ids" in tensors else None
    out = run(model, ids, lengths, a.steps, step_ids, a.sos, a.eos, a.pad, a.max_len, _rules(a))
    if a.rounding:
        out.update(_contiguous(rounding(model, ids, lengths, out)))
    _parent(a.out)
    ref.write_safetensors(a.out, out)


def cmd_beam(a):
    model = toolkits.load_model(a.checkpoint)
    _, ids, lengths = _read_inputs(a.inputs)
    out = beam(model, ids, lengths, a.beam, a.max_len, a.n_best, a.length_penalty, a.sos, a.eos, a.pad, _rules(a),
               a.search, a.onmt_penalty, a.unk)
    _parent(a.out)
    ref.write_safetensors(a.out, out)


# ---------------------------------------------------------------------------
# ONNX export with torch.onnx (for comparison with attnx's own graphs)


class _EncoderExport(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.encoder = model.encoder

    def forward(self, source_ids, source_lengths):
        # The packed path needs concrete lengths; the exported graph uses the
        # RNN's sequence_lens via pack_padded_sequence when torch can export it.
        embedded = self.encoder.embedding(source_ids)
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            embedded, source_lengths, batch_first=True, enforce_sorted=False)
        out, state = ref.run_rnn(self.encoder.rnn, packed, None)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=source_ids.shape[1])
        return (y,) + state


class _EncoderExportFull(torch.nn.Module):
    """Fallback: the plain RNN (full-length rows only)."""

    def __init__(self, model):
        super().__init__()
        self.encoder = model.encoder

    def forward(self, source_ids, source_lengths):
        y, state = ref.run_rnn(self.encoder.rnn, self.encoder.embedding(source_ids), None)
        return (y,) + state


class _DecoderExport(torch.nn.Module):
    """One decoder step with the ONNX interface's inputs: input_ids, hidden,
    cell (LSTM only), encoder_outputs, source_lengths."""

    def __init__(self, model):
        super().__init__()
        self.decoder = model.decoder
        self.lstm = model.cell == "lstm"

    def forward(self, input_ids, *args):
        n = 2 if self.lstm else 1
        state, (encoder_outputs, source_lengths) = tuple(args[:n]), args[n:]
        lp, next_state, att = self.decoder(input_ids, state, encoder_outputs, source_lengths)
        return (lp,) + tuple(next_state) + (att,)


def _describe(path):
    import onnx
    m = onnx.load(path)

    def vi(v):
        dims = []
        for d in v.type.tensor_type.shape.dim:
            dims.append(d.dim_param if d.dim_param else d.dim_value)
        return {"name": v.name, "elem_type": onnx.TensorProto.DataType.Name(v.type.tensor_type.elem_type),
                "shape": dims}

    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {"file": os.path.basename(path), "nodes": len(m.graph.node), "op_types": dict(sorted(ops.items())),
            "inputs": [vi(v) for v in m.graph.input], "outputs": [vi(v) for v in m.graph.output],
            "opset": [{"domain": o.domain, "version": o.version} for o in m.opset_import]}


class _ToolkitEncoderExport(torch.nn.Module):
    """A toolkit model's encoder with the ONNX interface: encoder_outputs
    and each initial decoder state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, source_ids, source_lengths):
        enc, state = self.model.encode(source_ids, source_lengths)
        return (enc,) + tuple(state)


class _ToolkitDecoderExport(torch.nn.Module):
    """A toolkit model's decoder step: input_ids, every state by name,
    encoder_outputs, source_lengths in; log_probs, next_ states, attention
    out."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.n = len(model.state_names)

    def forward(self, input_ids, *args):
        state, (enc, lengths) = tuple(args[:self.n]), args[self.n:]
        lp, nxt, att = self.model.step(input_ids, state, enc, lengths)
        return (lp,) + tuple(nxt) + (att,)


def export_toolkit_onnx(ref_model, out_dir, opset=17):
    """torch.onnx.export of a toolkit model (toolkits.Reference): encoder
    and one decoder step, traced at batch 1."""
    model = ref_model.model.eval()
    names = list(model.state_names)
    S = 5
    ids = torch.full((1, S), 4, dtype=torch.int64)
    lengths = torch.tensor([S], dtype=torch.int64)
    report = {"torch": torch.__version__, "opset": opset, "config": model.cfg, "notes": []}
    enc_path, dec_path = os.path.join(out_dir, "encoder.onnx"), os.path.join(out_dir, "decoder.onnx")
    state_axes = {n: {1: "batch"} for n in names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_ToolkitEncoderExport(model), (ids, lengths), enc_path, opset_version=opset,
                          input_names=["source_ids", "source_lengths"], output_names=["encoder_outputs"] + names,
                          dynamic_axes={"source_ids": {0: "batch", 1: "src_len"}, "source_lengths": {0: "batch"},
                                        "encoder_outputs": {0: "batch", 1: "src_len"}, **state_axes})
        with torch.no_grad():
            enc, state = model.encode(ids, lengths)
        sos = 2 if model.sz.Vt > 2 else 0
        args = (torch.tensor([sos]),) + tuple(state) + (enc, lengths)
        out_names = ["log_probs"] + ["next_" + n for n in names] + ["attention"]
        torch.onnx.export(_ToolkitDecoderExport(model), args, dec_path, opset_version=opset,
                          input_names=["input_ids"] + names + ["encoder_outputs", "source_lengths"], output_names=out_names,
                          dynamic_axes={"input_ids": {0: "batch"}, "encoder_outputs": {0: "batch", 1: "src_len"},
                                        "source_lengths": {0: "batch"}, "log_probs": {0: "batch"},
                                        "attention": {0: "batch", 1: "src_len"}, **state_axes,
                                        **{"next_" + n: {1: "batch"} for n in names}})
    report["encoder"] = _describe(enc_path)
    report["decoder"] = _describe(dec_path)
    report["notes"].append("traced at batch 1 with the reference's toolkit module (reference/toolkits.py)")
    with open(os.path.join(out_dir, "torch_export.json"), "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")
    return report


def export_onnx(model, out_dir, opset=17):
    os.makedirs(out_dir, exist_ok=True)
    if isinstance(model, toolkits.Reference):
        return export_toolkit_onnx(model, out_dir, opset)
    cfg = model.config
    H, L = cfg["hidden"], cfg["layers"]
    # Traced at batch 1: torch.onnx.export specialises the LSTM's initial
    # state (and the decoders) to the traced batch, so only batch 1 runs.
    B, S = 1, min(5, cfg.get("max_length", 5))
    ids = torch.full((B, S), 4 if cfg["src_vocab"] > 4 else 0, dtype=torch.int64)
    lengths = torch.tensor([S], dtype=torch.int64)
    report = {"torch": torch.__version__, "opset": opset, "config": cfg, "notes": []}
    lstm = cfg["cell"] == "lstm"
    enc_path = os.path.join(out_dir, "encoder.onnx")
    enc_in = ["source_ids", "source_lengths"]
    enc_out = ["encoder_outputs", "hidden"] + (["cell"] if lstm else [])
    enc_axes = {"source_ids": {0: "batch", 1: "src_len"}, "source_lengths": {0: "batch"},
                "encoder_outputs": {0: "batch", 1: "src_len"}, "hidden": {1: "batch"}, "cell": {1: "batch"}}
    if not lstm:
        del enc_axes["cell"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(_EncoderExport(model).eval(), (ids, lengths), enc_path, opset_version=opset,
                              input_names=enc_in, output_names=enc_out, dynamic_axes=enc_axes)
            report["encoder_packed"] = True
        except Exception as e:  # noqa: BLE001 - fall back and record why
            report["notes"].append("packed encoder export failed (%s: %s); exported the full-length LSTM"
                                   % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            report["encoder_packed"] = False
            torch.onnx.export(_EncoderExportFull(model).eval(), (ids, torch.full((B,), S, dtype=torch.int64)),
                              enc_path, opset_version=opset, input_names=enc_in, output_names=enc_out,
                              dynamic_axes=enc_axes)
        with torch.no_grad():
            enc, state = model.encoder(ids, lengths)
        # torch.onnx fixes the decoder batch at the traced size (1 here).
        dec_path = os.path.join(out_dir, "decoder.onnx")
        sos = model.special_tokens()[0]
        dec_args = (torch.tensor([sos]),) + tuple(t[:, :1].contiguous() for t in state) + (
            enc[:1].contiguous(), lengths[:1].contiguous())
        dec_in = ["input_ids", "hidden"] + (["cell"] if lstm else []) + ["encoder_outputs", "source_lengths"]
        dec_out = ["log_probs", "next_hidden"] + (["next_cell"] if lstm else []) + ["attention"]
        axes = {"input_ids": {0: "batch"}, "hidden": {1: "batch"}, "cell": {1: "batch"},
                "encoder_outputs": {0: "batch", 1: "src_len"}, "source_lengths": {0: "batch"},
                "log_probs": {0: "batch"}, "next_hidden": {1: "batch"}, "next_cell": {1: "batch"},
                "attention": {0: "batch", 1: "src_len"}}
        torch.onnx.export(_DecoderExport(model).eval(), dec_args, dec_path, opset_version=opset,
                          input_names=dec_in, output_names=dec_out,
                          dynamic_axes={k: v for k, v in axes.items() if k in dec_in or k in dec_out})
    report["encoder"] = _describe(enc_path)
    report["decoder"] = _describe(dec_path)
    report["notes"].append("decoder traced at batch 1, H=%d, L=%d; dynamic batch axes are requested but "
                           "torch may specialise shapes during tracing" % (H, L))
    with open(os.path.join(out_dir, "torch_export.json"), "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")
    return report


def cmd_export_onnx(a):
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ReferenceError("export-onnx needs the onnx Python package (Debian python3-onnx)")
    rep = export_onnx(toolkits.load_model(a.checkpoint), a.out_dir, a.opset)
    print("encoder.onnx: %d nodes, decoder.onnx: %d nodes" % (rep["encoder"]["nodes"], rep["decoder"]["nodes"]))


def _parent(path):
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise ReferenceError("output directory %s does not exist" % d)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ReferenceError("%s (see %s --help)" % (message, self.prog))


def parser():
    p = _Parser(prog="reference.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)

    m = sub.add_parser("make-model", help="save a seeded random model")
    m.add_argument("--arch", required=True, choices=ref.ARCHS)
    m.add_argument("--hidden", type=int, required=True)
    m.add_argument("--layers", type=int, default=1)
    m.add_argument("--src-vocab", type=int, required=True)
    m.add_argument("--tgt-vocab", type=int, required=True)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--cell", choices=ref.CELLS, default=None,
                   help="default: lstm for the article's decoders, gru for the tutorial's")
    m.add_argument("--embedding-size", type=int, default=None, help="E (default: H)")
    m.add_argument("--max-length", type=int, default=None,
                   help="M of tutorial-location (default %d, the tutorial's MAX_LENGTH)" % ref.TUTORIAL_MAX_LENGTH)
    m.add_argument("--std", type=float, default=0.5, help="std of the N(0, std) init of every parameter")
    m.add_argument("--out", required=True)
    m.add_argument("--format", choices=("pt", "safetensors"), default=None,
                   help="default: from the extension (.safetensors) else pt")
    m.set_defaults(fn=cmd_make_model)

    t = sub.add_parser("make-toolkit", help="save a seeded random toolkit model as its toolkit saves it")
    t.add_argument("--config", required=True, help="attnx.json's model fields as JSON (arch, cell, hidden_size, ...)")
    t.add_argument("--format", required=True, choices=TOOLKIT_FORMATS)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--std", type=float, default=0.5, help="std of the N(0, std) init of every parameter")
    t.add_argument("--words", default=None, help="JSON list: the vocabulary's words after the specials (chatbot, OpenNMT-py, JoeyNMT)")
    t.add_argument("--joey-version", default="2.3.0", help="joeynmt_version written in a JoeyNMT config")
    t.add_argument("--out", required=True, help="the checkpoint (JoeyNMT: the model directory)")
    t.set_defaults(fn=cmd_make_toolkit)

    d = sub.add_parser("toolkit-decode", help="greedy decoding of text the way a toolkit does (a make-toolkit model's sidecar)")
    d.add_argument("--model", required=True, help="the _reference.json make-toolkit wrote beside the checkpoint")
    d.add_argument("--texts", required=True, help="JSON list of sentences (white-space separated words)")
    d.add_argument("--max-len", type=int, default=20)
    d.add_argument("--out", required=True, help="JSON: one token list per sentence")
    d.set_defaults(fn=cmd_toolkit_decode)

    r = sub.add_parser("random-inputs", help="write seeded source_ids/source_lengths")
    r.add_argument("--batch", type=int, required=True)
    r.add_argument("--src-len", type=int, required=True)
    r.add_argument("--src-vocab", type=int, required=True)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--ragged", action="store_true")
    r.add_argument("--out", required=True)
    r.set_defaults(fn=cmd_random_inputs)

    u = sub.add_parser("run", help="encoder + decoder steps + greedy decoding")
    u.add_argument("--checkpoint", required=True)
    u.add_argument("--inputs", required=True)
    u.add_argument("--steps", type=int, required=True)
    u.add_argument("--out", required=True)
    u.add_argument("--sos", type=int, default=ref.SOS_ID)
    u.add_argument("--eos", type=int, default=ref.EOS_ID)
    u.add_argument("--pad", type=int, default=ref.PAD_ID)
    u.add_argument("--max-len", type=int, default=None, help="greedy decoding limit (default: --steps)")
    u.add_argument("--rules", default=None, help="a toolkit's decoding rules for greedy decoding, attnx.json's decoding as JSON")
    u.add_argument("--rounding", action="store_true",
                   help="also write rounding_<output>: PyTorch's own float32 error per element against float64 on the same inputs")
    u.set_defaults(fn=cmd_run)

    b = sub.add_parser("beam", help="beam search (spec: Beam search): n-best lists with scores")
    b.add_argument("--checkpoint", required=True)
    b.add_argument("--inputs", required=True)
    b.add_argument("--beam", type=int, required=True, help="K, hypotheses per row")
    b.add_argument("--max-len", type=int, required=True, help="decoder steps at most")
    b.add_argument("--n-best", type=int, default=None, help="hypotheses written per row (default K)")
    b.add_argument("--length-penalty", type=float, default=1.0, help="alpha in score / length ** alpha")
    b.add_argument("--rules", default=None, help="a toolkit's decoding rules, attnx.json's decoding as JSON")
    b.add_argument("--search", default="spec", help="spec (attnx's beam search), opennmt (OpenNMT-py 3.x's BeamSearch), joeynmt (JoeyNMT 2.x's beam_search) or fairseq (fairseq's SequenceGenerator)")
    b.add_argument("--onmt-penalty", default="avg", help="with --search opennmt: -length_penalty none, avg or wu (--length-penalty is -alpha)")
    b.add_argument("--unk", type=int, default=0, help="with --search joeynmt: the token that fills a short n-best list")
    b.add_argument("--out", required=True)
    b.add_argument("--sos", type=int, default=ref.SOS_ID)
    b.add_argument("--eos", type=int, default=ref.EOS_ID)
    b.add_argument("--pad", type=int, default=ref.PAD_ID)
    b.set_defaults(fn=cmd_beam)

    e = sub.add_parser("export-onnx", help="torch.onnx.export of encoder and one decoder step")
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--out-dir", required=True)
    e.add_argument("--opset", type=int, default=17)
    e.set_defaults(fn=cmd_export_onnx)

    u = sub.add_parser("run-module", help="what run writes, computed by your own modules (attnx verify --torch-module)")
    u.add_argument("--module", required=True, help="FILE.py defining build(config) -> (encoder, decoder)")
    u.add_argument("--checkpoint", required=True, help="the weights, as safetensors (encoder.* and decoder.* keys)")
    u.add_argument("--config", required=True, help="the model's config as JSON (arch, cell, hidden, ..., sos, eos)")
    u.add_argument("--inputs", required=True)
    u.add_argument("--steps", type=int, required=True)
    u.add_argument("--pad", type=int, default=ref.PAD_ID)
    u.add_argument("--out", required=True)
    u.set_defaults(fn=cmd_run_module)

    j = sub.add_parser("batch", help="run many subcommands in this one process")
    j.add_argument("jobs", help="JSON array of argument lists, one subcommand each")
    j.set_defaults(fn=cmd_batch)
    return p


def cmd_run_module(a):
    import user_module
    import user_toolkit
    config = user_module.parse_config(a.config)
    if not os.path.exists(a.checkpoint):
        raise ReferenceError("checkpoint %s does not exist" % a.checkpoint)
    weights, _ = ref.read_safetensors(a.checkpoint)
    tensors, ids, lengths = _read_inputs(a.inputs)
    step_ids = _int_tensor(tensors, "step_input_ids", a.inputs, 2) if "step_input_ids" in tensors else None
    if a.steps < 0:
        raise ReferenceError("--steps %d, want >= 0" % a.steps)
    if step_ids is not None and tuple(step_ids.shape) != (a.steps, ids.shape[0]):
        raise ReferenceError("step_input_ids has shape %s, want [steps=%d, batch=%d]"
                             % (list(step_ids.shape), a.steps, ids.shape[0]))
    if user_toolkit.convention(config["arch"]):
        # A toolkit's convention: user_toolkit builds on user_module.
        out = user_toolkit.run(a.module, user_module.import_file(a.module), weights, config, ids, lengths, a.steps, step_ids, a.steps, a.pad)
    else:
        out = user_module.run(a.module, weights, config, ids, lengths, a.steps, step_ids, pad=a.pad)
    _parent(a.out)
    ref.write_safetensors(a.out, out)


def cmd_batch(a):
    """Runs each job (an argument list such as ["make-model", "--arch", ...])
    in order in this process, so that a caller with many small jobs pays
    Python's and torch's start-up once. The first failing job stops the
    batch; its error names the job."""
    try:
        with open(a.jobs) as f:
            jobs = json.load(f)
    except (OSError, ValueError) as e:
        raise ReferenceError("batch %s: %s" % (a.jobs, e))
    if not isinstance(jobs, list) or not all(isinstance(j, list) and j and all(isinstance(x, str) for x in j)
                                             for j in jobs):
        raise ReferenceError("batch %s: want a JSON array of non-empty lists of strings" % a.jobs)
    for i, argv in enumerate(jobs):
        if argv[0] == "batch":
            raise ReferenceError("batch %s: job %d is a batch itself" % (a.jobs, i))
        try:
            sub = parser().parse_args(argv)
            sub.fn(sub)
        except (ReferenceError, OSError) as e:
            raise ReferenceError("batch job %d (%s): %s" % (i, argv[0], e))


def main(argv=None):
    try:
        a = parser().parse_args(argv)
        if not getattr(a, "fn", None):
            raise ReferenceError("missing subcommand: make-model, random-inputs, run, beam, export-onnx, run-module or batch")
        a.fn(a)
    except ReferenceError as e:
        print("reference: %s" % e, file=sys.stderr)
        return 2
    except OSError as e:
        print("reference: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
