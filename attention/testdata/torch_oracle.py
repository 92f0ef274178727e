#!/usr/bin/python3
"""PyTorch oracle for the attention package's own tests (run with /usr/bin/python3).

Small PyTorch modules for every architecture x cell of docs/models.md,
written from the spec's formulas, with the spec's attribute names (so their
state_dict keys are the checkpoint layouts attnx reads). For each case of a
JSON list it saves a random model and PyTorch's outputs:

  torch_oracle.py run CASES.json OUTDIR
      OUTDIR/NAME/model.pt   the state_dict (encoder.* and decoder.* keys)
      OUTDIR/NAME/io.pt      a flat dict of tensors: source_ids, source_lengths,
                             step_input_ids [T, B], encoder_outputs, hidden,
                             cell (LSTM), per step t: log_probs.t, next_hidden.t,
                             next_cell.t (LSTM), attention.t; greedy_tokens
                             [B, steps] and greedy_attention [B, steps, S]
                             (PAD / zeros after a row's EOS); for tutorial
                             architectures at batch 1 and one layer,
                             tutorial_tokens: the tutorial's own way of running
                             its modules, one token at a time.
  torch_oracle.py export CASES.json OUTDIR
      OUTDIR/NAME/model.pt as above, OUTDIR/NAME/torch_encoder.onnx and
      torch_decoder.onnx (torch.onnx.export, opset 17, traced at batch 1) and
      OUTDIR/NAME/torch_export.json with their node counts.
  torch_oracle.py beam CASES.json OUTDIR
      OUTDIR/NAME/model.pt as above, OUTDIR/NAME/io.pt (source_ids,
      source_lengths) and, for each K of the case's "ks", OUTDIR/NAME/beamK.pt:
      the beam search of reference/attnx_reference.py (beam_search_steps,
      with the case's "alpha") over these modules, as `reference.py beam`
      writes it (beam_tokens, beam_lengths, beam_scores,
      beam_normalized_scores, beam_counts). For the models the reference
      cannot make itself (the tutorial decoders with LSTM cells).

A case: {"name", "arch", "cell", "hidden", "embedding", "layers", "src_vocab",
"tgt_vocab", "max_length" (tutorial-location), "batch", "src_len", "ragged",
"steps", "max_len", "sos", "eos", "pad", "seed"}.
"""

import json
import os
import sys
import warnings

import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(1)


def make_rnn(cell, inp, hidden, layers):
    cls = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
    return cls(inp, hidden, layers, batch_first=True)


class Module(nn.Module):
    """Base: the recurrent module is an attribute named after the cell."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def rnn(self):
        return getattr(self, self.cell)

    def top(self, state):
        h = state[0] if self.cell == "lstm" else state
        return h[-1]


def length_mask(lengths, S):
    return torch.arange(S)[None, :] < lengths[:, None]


class Encoder(Module):
    def __init__(self, cell, vocab, E, H, L):
        super().__init__(cell)
        self.embedding = nn.Embedding(vocab, E)
        setattr(self, cell, make_rnn(cell, E, H, L))

    def forward(self, ids, lengths):
        S = ids.shape[1]
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(ids), lengths, batch_first=True, enforce_sorted=False)
        out, state = self.rnn()(packed)
        y, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=S)
        return y, state


def attend(score, enc, lengths):
    score = score.masked_fill(~length_mask(lengths, enc.shape[1]), float("-inf"))
    a = F.softmax(score, dim=-1)
    return a, torch.bmm(a.unsqueeze(1), enc).squeeze(1)


class Bahdanau(Module):
    """The article's additive decoder; attn_combine is declared, never used."""

    def __init__(self, cell, V, E, H, L):
        super().__init__(cell)
        self.embedding = nn.Embedding(V, E)
        self.fc_hidden = nn.Linear(H, H, bias=False)
        self.fc_encoder = nn.Linear(H, H, bias=False)
        self.weight = nn.Parameter(torch.empty(1, H))
        self.attn_combine = nn.Linear(2 * H, H)
        setattr(self, cell, make_rnn(cell, E + H, H, L))
        self.classifier = nn.Linear(H, V)

    def forward(self, ids, state, enc, lengths):
        u = torch.tanh(self.fc_hidden(self.top(state)).unsqueeze(1) + self.fc_encoder(enc))
        a, ctx = attend((u * self.weight).sum(-1), enc, lengths)
        out, state = self.rnn()(torch.cat([self.embedding(ids), ctx], -1).unsqueeze(1), state)
        return F.log_softmax(self.classifier(out[:, 0]), -1), state, a


class LuongAttention(nn.Module):
    def __init__(self, method, H):
        super().__init__()
        self.method = method
        if method in ("general", "concat"):
            self.fc = nn.Linear(H, H, bias=False)
        if method == "concat":
            self.weight = nn.Parameter(torch.empty(1, H))

    def forward(self, q, enc):
        if self.method == "dot":
            return torch.bmm(enc, q.unsqueeze(-1)).squeeze(-1)
        if self.method == "general":
            return torch.bmm(enc, self.fc(q).unsqueeze(-1)).squeeze(-1)
        return (torch.tanh(self.fc(q.unsqueeze(1) + enc)) * self.weight).sum(-1)


class Luong(Module):
    def __init__(self, cell, method, V, E, H, L):
        super().__init__(cell)
        self.embedding = nn.Embedding(V, E)
        setattr(self, cell, make_rnn(cell, E, H, L))
        self.attention = LuongAttention(method, H)
        self.classifier = nn.Linear(2 * H, V)

    def forward(self, ids, state, enc, lengths):
        out, state = self.rnn()(self.embedding(ids).unsqueeze(1), state)
        q = out[:, 0]
        a, ctx = attend(self.attention(q, enc), enc, lengths)
        return F.log_softmax(self.classifier(torch.cat([q, ctx], -1)), -1), state, a


class TutorialLocation(Module):
    """The 2017-2023 tutorial decoder, batched: the encoder outputs sit in a
    max_length buffer, zero past each row's length, as the tutorial's do."""

    def __init__(self, cell, V, E, H, L, M):
        super().__init__(cell)
        self.max_length = M
        self.embedding = nn.Embedding(V, E)
        self.attn = nn.Linear(E + H, M)
        self.attn_combine = nn.Linear(E + H, H)
        setattr(self, cell, make_rnn(cell, H, H, L))
        self.out = nn.Linear(H, V)

    def forward(self, ids, state, enc, lengths):
        B, S, H = enc.shape
        e = self.embedding(ids)
        w = F.softmax(self.attn(torch.cat([e, self.top(state)], -1)), dim=1)  # [B, M]
        mask = length_mask(lengths, S)
        buf = F.pad(enc * mask.unsqueeze(-1), (0, 0, 0, self.max_length - S))  # [B, M, H]
        ctx = torch.bmm(w.unsqueeze(1), buf).squeeze(1)
        x = F.relu(self.attn_combine(torch.cat([e, ctx], -1)))
        out, state = self.rnn()(x.unsqueeze(1), state)
        return F.log_softmax(self.out(out[:, 0]), -1), state, w[:, :S] * mask


class BahdanauAttention(nn.Module):
    def __init__(self, H):
        super().__init__()
        self.Wa = nn.Linear(H, H)
        self.Ua = nn.Linear(H, H)
        self.Va = nn.Linear(H, 1)

    def forward(self, query, keys, lengths):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys))).squeeze(2)
        return attend(scores, keys, lengths)


class TutorialBahdanau(Module):
    def __init__(self, cell, V, E, H, L):
        super().__init__(cell)
        self.embedding = nn.Embedding(V, E)
        self.attention = BahdanauAttention(H)
        setattr(self, cell, make_rnn(cell, E + H, H, L))
        self.out = nn.Linear(H, V)

    def forward(self, ids, state, enc, lengths):
        a, ctx = self.attention(self.top(state).unsqueeze(1), enc, lengths)
        out, state = self.rnn()(torch.cat([self.embedding(ids), ctx], -1).unsqueeze(1), state)
        return F.log_softmax(self.out(out[:, 0]), -1), state, a


class Seq2Seq(nn.Module):
    def __init__(self, c):
        super().__init__()
        cell, E, H, L = c["cell"], c["embedding"], c["hidden"], c["layers"]
        V = c["tgt_vocab"]
        self.encoder = Encoder(cell, c["src_vocab"], E, H, L)
        arch = c["arch"]
        if arch == "bahdanau":
            self.decoder = Bahdanau(cell, V, E, H, L)
        elif arch.startswith("luong-"):
            self.decoder = Luong(cell, arch[len("luong-"):], V, E, H, L)
        elif arch == "tutorial-location":
            self.decoder = TutorialLocation(cell, V, E, H, L, c["max_length"])
        elif arch == "tutorial-bahdanau":
            self.decoder = TutorialBahdanau(cell, V, E, H, L)
        else:
            raise SystemExit("unknown arch %s" % arch)


def make_model(c):
    torch.manual_seed(c["seed"])
    m = Seq2Seq(c)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.5)
    return m.eval()


def inputs(c):
    g = torch.Generator().manual_seed(c["seed"] + 1)
    B, S = c["batch"], c["src_len"]
    ids = torch.randint(3, c["src_vocab"], (B, S), generator=g)
    if c["ragged"]:
        lengths = torch.randint(1, S + 1, (B,), generator=g)
        lengths[int(torch.randint(0, B, (1,), generator=g))] = S
    else:
        lengths = torch.full((B,), S, dtype=torch.int64)
    for i, n in enumerate(lengths.tolist()):
        ids[i, n:] = c["pad"] if c["pad"] < c["src_vocab"] else 0
    steps = torch.randint(0, c["tgt_vocab"], (c["steps"], B), generator=g)
    steps[0] = c["sos"]
    return ids, lengths, steps


def split_state(cell, state):
    return (state[0], state[1]) if cell == "lstm" else (state, None)


def greedy(m, ids, lengths, sos, eos, pad, max_len):
    enc, state = m.encoder(ids, lengths)
    B = ids.shape[0]
    inp = torch.full((B,), sos, dtype=torch.int64)
    done = torch.zeros(B, dtype=torch.bool)
    toks, attns = [], []
    for _ in range(max_len):
        lp, state, a = m.decoder(inp, state, enc, lengths)
        nxt = lp.argmax(-1)
        toks.append(torch.where(done, torch.full_like(nxt, pad), nxt))
        attns.append(torch.where(done[:, None], torch.zeros_like(a), a))
        done = done | (nxt == eos)
        inp = nxt
        if bool(done.all()):
            break
    return torch.stack(toks, 1), torch.stack(attns, 1)


def tutorial_2017_tokens(dec, enc_mod, ids, sos, eos):
    """The 2017-2023 tutorial's evaluate(), in the tutorial's call convention:
    the encoder fed one token at a time from a zero state, its outputs copied
    into a zero-filled max_length buffer, the decoder at batch 1 with
    hidden[0] as the query, topk(1), stop at EOS or after max_length."""
    M, H = dec.max_length, dec.gru.hidden_size
    hidden = torch.zeros(1, 1, H)
    buf = torch.zeros(M, H)
    for ei in range(ids.shape[1]):
        out, hidden = enc_mod.gru(enc_mod.embedding(ids[0, ei]).view(1, 1, -1), hidden)
        buf[ei] += out[0, 0]
    inp = torch.tensor([[sos]])
    toks = []
    for _ in range(M):
        emb = dec.embedding(inp).view(1, 1, -1)
        w = F.softmax(dec.attn(torch.cat((emb[0], hidden[0]), 1)), dim=1)
        applied = torch.bmm(w.unsqueeze(0), buf.unsqueeze(0))
        x = F.relu(dec.attn_combine(torch.cat((emb[0], applied[0]), 1)).unsqueeze(0))
        out, hidden = dec.gru(x, hidden)
        lp = F.log_softmax(dec.out(out[0]), dim=1)
        _, topi = lp.data.topk(1)
        toks.append(topi.item())
        if topi.item() == eos:
            break
        inp = topi.squeeze().detach()
    return torch.tensor([toks])


def tutorial_current_tokens(dec, enc_mod, ids, sos, eos, max_len):
    """The current tutorial's evaluate(): the batch-first encoder over the
    whole sentence, forward_step with hidden.permute(1, 0, 2) as the query,
    max_len steps, topk(1), cut after the first EOS."""
    enc, hidden = enc_mod.gru(enc_mod.embedding(ids))
    inp = torch.full((1, 1), sos, dtype=torch.int64)
    outs = []
    for _ in range(max_len):
        emb = dec.embedding(inp)
        query = hidden.permute(1, 0, 2)
        a = dec.attention
        scores = a.Va(torch.tanh(a.Wa(query) + a.Ua(enc))).squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, enc)
        out, hidden = dec.gru(torch.cat((emb, context), dim=2), hidden)
        out = dec.out(out)
        outs.append(out)
        _, topi = out.topk(1)
        inp = topi.squeeze(-1).detach()
    toks = F.log_softmax(torch.cat(outs, dim=1), dim=-1).topk(1)[1].squeeze()
    cut = []
    for t in toks.view(-1).tolist():
        cut.append(t)
        if t == eos:
            break
    return torch.tensor([cut])


def run_case(c, out_dir):
    m = make_model(c)
    d = os.path.join(out_dir, c["name"])
    os.makedirs(d, exist_ok=True)
    torch.save(m.state_dict(), os.path.join(d, "model.pt"))
    ids, lengths, steps = inputs(c)
    cell = c["cell"]
    res = {"source_ids": ids, "source_lengths": lengths, "step_input_ids": steps}
    with torch.no_grad():
        enc, state = m.encoder(ids, lengths)
        res["encoder_outputs"] = enc
        res["hidden"], cl = split_state(cell, state)
        if cl is not None:
            res["cell"] = cl
        for t in range(c["steps"]):
            lp, state, a = m.decoder(steps[t], state, enc, lengths)
            h, cl = split_state(cell, state)
            res["log_probs.%d" % t], res["next_hidden.%d" % t], res["attention.%d" % t] = lp, h, a
            if cl is not None:
                res["next_cell.%d" % t] = cl
        toks, attn = greedy(m, ids, lengths, c["sos"], c["eos"], c["pad"], c["max_len"])
        res["greedy_tokens"], res["greedy_attention"] = toks, attn
        if cell == "gru" and c["batch"] == 1 and c["layers"] == 1:
            if c["arch"] == "tutorial-location":
                res["tutorial_tokens"] = tutorial_2017_tokens(m.decoder, m.encoder, ids, c["sos"], c["eos"])
            elif c["arch"] == "tutorial-bahdanau":
                res["tutorial_tokens"] = tutorial_current_tokens(m.decoder, m.encoder, ids, c["sos"], c["eos"], c["max_len"])
    torch.save({k: v.contiguous() for k, v in res.items()}, os.path.join(d, "io.pt"))


def beam_case(c, out_dir):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reference"))
    import attnx_reference as ref

    m = make_model(c)
    d = os.path.join(out_dir, c["name"])
    os.makedirs(d, exist_ok=True)
    torch.save(m.state_dict(), os.path.join(d, "model.pt"))
    ids, lengths, _ = inputs(c)
    torch.save({"source_ids": ids.contiguous(), "source_lengths": lengths.contiguous()}, os.path.join(d, "io.pt"))
    lstm = c["cell"] == "lstm"
    as_tuple = (lambda s: tuple(s)) if lstm else (lambda s: (s,))
    from_tuple = (lambda s: s) if lstm else (lambda s: s[0])
    B, T = ids.shape[0], c["max_len"]
    with torch.no_grad():
        enc, state = m.encoder(ids, lengths)
        for k in c["ks"]:
            rows = torch.arange(B).repeat_interleave(k)
            enc_k, len_k = enc.index_select(0, rows), lengths.index_select(0, rows)

            def step(inp, st):
                lp, nxt, _ = m.decoder(inp, from_tuple(st), enc_k, len_k)
                return lp, as_tuple(nxt)

            start = tuple(t.index_select(1, rows) for t in as_tuple(state))
            results = ref.beam_search_steps(step, start, B, k, T, c["sos"], c["eos"], c["alpha"])
            out = {"beam_tokens": torch.full((B, k, T), c["pad"], dtype=torch.int64),
                   "beam_lengths": torch.zeros(B, k, dtype=torch.int64),
                   "beam_scores": torch.full((B, k), float("-inf")),
                   "beam_normalized_scores": torch.full((B, k), float("-inf")),
                   "beam_counts": torch.zeros(B, dtype=torch.int64)}
            for b, hyps in enumerate(results):
                hyps = hyps[:k]
                out["beam_counts"][b] = len(hyps)
                for j, h in enumerate(hyps):
                    out["beam_tokens"][b, j, :len(h.tokens)] = torch.tensor(h.tokens)
                    out["beam_lengths"][b, j] = len(h.tokens)
                    out["beam_scores"][b, j] = h.score
                    out["beam_normalized_scores"][b, j] = h.normalized
            torch.save(out, os.path.join(d, "beam%d.pt" % k))


class EncoderExport(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.encoder = m.encoder

    def forward(self, ids, lengths):
        enc, state = self.encoder(ids, lengths)
        return (enc,) + (tuple(state) if self.encoder.cell == "lstm" else (state,))


class DecoderExport(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.decoder = m.decoder

    def forward(self, *args):
        if self.decoder.cell == "lstm":
            ids, h, c, enc, lengths = args
            lp, (h, c), a = self.decoder(ids, (h, c), enc, lengths)
            return lp, h, c, a
        ids, h, enc, lengths = args
        lp, h, a = self.decoder(ids, h, enc, lengths)
        return lp, h, a


def count_nodes(path):
    import onnx
    return len(onnx.load(path).graph.node)


def export_case(c, out_dir, opset=17):
    m = make_model(c)
    d = os.path.join(out_dir, c["name"])
    os.makedirs(d, exist_ok=True)
    torch.save(m.state_dict(), os.path.join(d, "model.pt"))
    ids, lengths, _ = inputs(dict(c, batch=1, ragged=False))
    lstm = c["cell"] == "lstm"
    report = {"opset": opset, "torch": torch.__version__}
    enc_path, dec_path = os.path.join(d, "torch_encoder.onnx"), os.path.join(d, "torch_decoder.onnx")
    enc_out = ["encoder_outputs", "hidden"] + (["cell"] if lstm else [])
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(EncoderExport(m), (ids, lengths), enc_path, opset_version=opset,
                          input_names=["source_ids", "source_lengths"], output_names=enc_out,
                          dynamic_axes={"source_ids": {0: "batch", 1: "src_len"}, "source_lengths": {0: "batch"}})
        enc, state = m.encoder(ids, lengths)
        h, cl = split_state(c["cell"], state)
        args = (torch.tensor([c["sos"]]), h) + ((cl,) if lstm else ()) + (enc, lengths)
        names = ["input_ids", "hidden"] + (["cell"] if lstm else []) + ["encoder_outputs", "source_lengths"]
        outs = ["log_probs", "next_hidden"] + (["next_cell"] if lstm else []) + ["attention"]
        torch.onnx.export(DecoderExport(m), args, dec_path, opset_version=opset, input_names=names, output_names=outs,
                          dynamic_axes={"encoder_outputs": {1: "src_len"}, "attention": {1: "src_len"}})
    report["encoder_nodes"], report["decoder_nodes"] = count_nodes(enc_path), count_nodes(dec_path)
    with open(os.path.join(d, "torch_export.json"), "w") as f:
        json.dump(report, f)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("run", "export", "beam"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2]) as f:
        cases = json.load(f)
    for c in cases:
        {"run": run_case, "export": export_case, "beam": beam_case}[argv[1]](c, argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
