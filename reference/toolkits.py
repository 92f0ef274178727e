"""attnx reference for the toolkits' models (docs/toolkits.md): OpenNMT-py's
RNN models, JoeyNMT's recurrent models, fairseq's LSTMModel,
bentrevett/pytorch-seq2seq's tutorial 3/4 model and PyTorch's chatbot
tutorial model.

It builds on attnx_reference (the spec's models and the checkpoint files),
which never imports it.

Written for attnx from the toolkits' published math, independently of the
Go code: each model is built from a config (attnx.json's fields) with its
toolkit's own parameter names, so that a toolkit's checkpoint loads into it
with load_state_dict(strict=True), and it computes one decoder step the way
its toolkit does. It also writes checkpoints the way each toolkit saves
them (save_*), so that tests have files of every layout without the
toolkits installed.

Every model exposes the reference interface of attnx_reference: encoder(ids,
lengths) -> (encoder_outputs [B,S,C], state tuple) and decoder(input_ids,
state, encoder_outputs, lengths) -> (log_probs [B,Vt], next state tuple,
attention [B,S]); state_names names the tuple's entries as decoder.onnx
does (hidden, cell, input_feed), each [rows, B, width].

Sources are packed (each row's own length), and attention is masked past
each length in every model: that is each toolkit's computation for a row
decoded alone (the chatbot and bentrevett's tutorial 3 mask nothing, which
only changes padded batches).
"""

import argparse
import json
import math
import os
import sys
import types

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import attnx_reference as ref  # the base: the spec's models and the checkpoint files

ONMT_ARCHS = ("onmt-dot", "onmt-general", "onmt-mlp")
JOEY_ARCHS = ("joey-bahdanau", "joey-luong")
CHATBOT_ARCHS = ("chatbot-dot", "chatbot-general", "chatbot-concat")
FAIRSEQ_ARCHS = ("fairseq-lstm", "fairseq-lstm-noattn")
TOOLKIT_ARCHS = ONMT_ARCHS + JOEY_ARCHS + ("bentrevett",) + CHATBOT_ARCHS + FAIRSEQ_ARCHS


class ToolkitError(Exception):
    """A user-facing error."""


def _rnn(cell, input_size, hidden, layers, bidirectional=False, batch_first=True):
    cls = nn.LSTM if cell == "lstm" else nn.GRU
    return cls(input_size, hidden, layers, batch_first=batch_first, bidirectional=bidirectional)


def _run(rnn, x, state):
    """rnn on x from state (tuple or None) -> (output, state tuple)."""
    if isinstance(rnn, nn.LSTM):
        out, (h, c) = rnn(x, state)
        return out, (h, c)
    out, h = rnn(x, None if state is None else state[0])
    return out, (h,)


def _packed(rnn, emb, lengths):
    """The encoder RNN over each row's own length: (outputs [B,S,D*h] zero
    past the length, final state tuple [L*D,B,h])."""
    S = emb.shape[1]
    packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, state = _run(rnn, packed, None)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=S)
    return out, state


def _mask(lengths, S):
    return torch.arange(S).unsqueeze(0) >= lengths.unsqueeze(1)


def _softmax_masked(scores, lengths):
    return F.softmax(scores.masked_fill(_mask(lengths, scores.shape[1]), float("-inf")), dim=1)


def _module(**children):
    m = nn.Module()
    for k, v in children.items():
        m.add_module(k, v)
    return m


def _cfg(cfg, key, default=None):
    v = cfg.get(key)
    return default if v in (None, 0, "") else v


class _Sizes:
    def __init__(self, cfg):
        self.arch = cfg["arch"]
        self.cell = cfg.get("cell") or "lstm"
        self.H = cfg["hidden_size"]
        self.E = _cfg(cfg, "embedding_size", self.H)
        self.Et = _cfg(cfg, "tgt_embedding_size", self.E)
        self.L = cfg["num_layers"]
        self.Le = _cfg(cfg, "encoder_layers", self.L)
        self.h = _cfg(cfg, "encoder_hidden_size", self.H)
        self.bi = bool(cfg.get("bidirectional"))
        self.Vs = cfg["src_vocab_size"]
        self.Vt = cfg["tgt_vocab_size"]
        self.input_feed = bool(cfg.get("input_feed"))
        self.bridge = cfg.get("bridge") or ""
        self.scale_src = bool(cfg.get("src_embedding_scale"))
        self.scale_tgt = bool(cfg.get("tgt_embedding_scale"))
        self.Eo = _cfg(cfg, "out_embedding_size", self.H)
        self.tied = bool(cfg.get("tied_output"))
        self.context_gate = cfg.get("context_gate") or ""
        self.copy = cfg.get("copy_attention") or ""  # reuse, dot, general, mlp or none
        self.copy_pad = cfg.get("copy_pad") or 0
        self.coverage = bool(cfg.get("coverage_attn"))


class ToolkitModel(nn.Module):
    """Base: the parameters live in the subclass under the toolkit's names."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        self.sz = _Sizes(cfg)

    @property
    def state_names(self):
        names = ["hidden"]
        if self.sz.cell == "lstm":
            names.append("cell")
        if self.sz.input_feed:
            names.append("input_feed")
        return tuple(names)

    @property
    def config(self):
        return {"arch": self.sz.arch, "src_vocab": self.sz.Vs, "tgt_vocab": self.sz.Vt}

    @property
    def output_size(self):
        return self.sz.Vt


# --------------------------------------------------------------------------
# OpenNMT-py


class _StackedCells(nn.Module):
    """OpenNMT-py's StackedLSTM / StackedGRU: layers of cells, the input
    feeding the first."""

    def __init__(self, cell, layers, input_size, hidden):
        super().__init__()
        cls = nn.LSTMCell if cell == "lstm" else nn.GRUCell
        self.lstm = cell == "lstm"
        self.layers = nn.ModuleList([cls(input_size if i == 0 else hidden, hidden) for i in range(layers)])

    def forward(self, x, state):
        hs, cs = [], []
        for i, layer in enumerate(self.layers):
            if self.lstm:
                h, c = layer(x, (state[0][i], state[1][i]))
                cs.append(c)
            else:
                h = layer(x, state[0][i])
            hs.append(h)
            x = h
        out = (torch.stack(hs),) + ((torch.stack(cs),) if self.lstm else ())
        return x, out


class OpenNMTModel(ToolkitModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        s = self.sz
        self.attn_type = s.arch.split("-", 1)[1]
        D = 2 if s.bi else 1
        enc_emb = nn.Embedding(s.Vs, s.E)
        dec_emb = nn.Embedding(s.Vt, s.Et)
        enc = _module(embeddings=_module(make_embedding=_module(emb_luts=nn.ModuleList([enc_emb]))),
                      rnn=_rnn(s.cell, s.E, s.h, s.Le, s.bi))
        if s.bridge == "relu-linear":
            n = 2 if s.cell == "lstm" else 1
            enc.add_module("bridge", nn.ModuleList([nn.Linear(s.h * s.Le, s.h * s.Le) for _ in range(n)]))
        if s.input_feed:
            rnn = _StackedCells(s.cell, s.L, s.Et + s.H, s.H)
        else:
            rnn = _rnn(s.cell, s.Et, s.H, s.L)
        attn = nn.Module()
        if self.attn_type == "general":
            attn.linear_in = nn.Linear(s.H, s.H, bias=False)
        elif self.attn_type == "mlp":
            attn.linear_context = nn.Linear(s.H, s.H, bias=False)
            attn.linear_query = nn.Linear(s.H, s.H, bias=True)
            attn.v = nn.Linear(s.H, 1, bias=False)
        attn.linear_out = nn.Linear(2 * s.H, s.H, bias=self.attn_type == "mlp")
        if s.coverage:
            attn.linear_cover = nn.Linear(1, s.H, bias=False)  # unused by OpenNMT-py's RNN decoders
        dec = _module(embeddings=_module(make_embedding=_module(emb_luts=nn.ModuleList([dec_emb]))), rnn=rnn, attn=attn)
        if s.context_gate:
            din = s.Et + (s.H if s.input_feed else 0)
            dec.add_module("context_gate", _module(context_gate=_module(
                gate=nn.Linear(din + 2 * s.H, s.H), source_proj=nn.Linear(s.H, s.H), target_proj=nn.Linear(din + s.H, s.H))))
        if s.copy and s.copy != "reuse":
            ca, t = nn.Module(), s.copy
            if t == "general":
                ca.linear_in = nn.Linear(s.H, s.H, bias=False)
            elif t == "mlp":
                ca.linear_context = nn.Linear(s.H, s.H, bias=False)
                ca.linear_query = nn.Linear(s.H, s.H, bias=True)
                ca.v = nn.Linear(s.H, 1, bias=False)
            ca.linear_out = nn.Linear(2 * s.H, s.H, bias=t == "mlp")  # unused: only its weights are read
            dec.add_module("copy_attn", ca)
        self.add_module("encoder", enc)
        self.add_module("decoder", dec)
        if s.copy:
            self.generator = _module(linear=nn.Linear(s.H, s.Vt), linear_copy=nn.Linear(s.H, 1))
        else:
            self.generator = nn.Linear(s.H, s.Vt)
        self.D = D

    def encode(self, ids, lengths):
        s = self.sz
        emb = self.encoder.embeddings.make_embedding.emb_luts[0](ids)
        out, state = _packed(self.encoder.rnn, emb, lengths)
        if s.bridge == "relu-linear":
            state = tuple(self._bridge(i, st) for i, st in enumerate(state))
        if s.bi:
            # per layer [forward; backward] (OpenNMT-py's _fix_enc_hidden)
            state = tuple(torch.cat([st[0::2], st[1::2]], 2) for st in state)
        if s.input_feed:
            state = state + (torch.zeros(1, ids.shape[0], s.H),)
        return out, state

    def _bridge(self, i, st):
        total = self.sz.h * self.sz.Le
        x = st.permute(1, 0, 2).contiguous()
        size = x.size()
        y = F.relu(self.encoder.bridge[i](x.view(-1, total))).view(size)
        return y.permute(1, 0, 2).contiguous()

    def step(self, ids, state, enc, lengths):
        o, nstate, p = self.features(ids, state, enc, lengths)
        if not self.sz.copy:
            return F.log_softmax(self.generator(o), dim=-1), nstate, p
        # OpenNMT-py's CopyGenerator: the vocabulary's share, as the log of
        # softmax (pad excluded) times 1 - p_copy, and the copy share over
        # the source positions, p_copy times the copy attention (alone, a
        # sentence's: within its length).
        g = self.generator
        logits = g.linear(o)
        logits[:, self.sz.copy_pad] = -float("inf")
        p_copy = torch.sigmoid(g.linear_copy(o))
        lp = torch.log(torch.softmax(logits, 1) * (1 - p_copy))
        a = p
        if self.sz.copy != "reuse":
            a = _softmax_masked(self._scores(self.decoder.copy_attn, self.sz.copy, o, enc), lengths)
        return lp, nstate, a, a * p_copy  # the attention onmt_translate's search sees: the copy attention

    @staticmethod
    def _scores(a, attn_type, q, enc):
        """GlobalAttention.score of query q [B,H] over enc [B,S,H]."""
        if attn_type == "dot":
            return torch.bmm(enc, q.unsqueeze(2)).squeeze(2)
        if attn_type == "general":
            return torch.bmm(enc, a.linear_in(q).unsqueeze(2)).squeeze(2)
        wq = a.linear_query(q).unsqueeze(1)
        return a.v(torch.tanh(wq + a.linear_context(enc))).squeeze(2)

    def features(self, ids, state, enc, lengths):
        """One decoder step up to the generator: (attentional output o,
        next state, attention)."""
        s = self.sz
        emb = self.decoder.embeddings.make_embedding.emb_luts[0](ids)
        n = 2 if s.cell == "lstm" else 1
        if s.input_feed:
            x = torch.cat([emb, state[n][0]], 1)
            q, rnn_state = self.decoder.rnn(x, state[:n])
        else:
            out, rnn_state = _run(self.decoder.rnn, emb.unsqueeze(1), state[:n])
            q = out[:, 0]
        a = self.decoder.attn
        p = _softmax_masked(self._scores(a, self.attn_type, q, enc), lengths)
        c = torch.bmm(p.unsqueeze(1), enc).squeeze(1)
        o = a.linear_out(torch.cat([c, q], 1))
        if self.attn_type != "mlp":
            o = torch.tanh(o)
        if s.context_gate:
            # OpenNMT-py's context gates (modules/gate.py) over the RNN's
            # input, its output and the attentional output.
            din = x if s.input_feed else emb
            g = self.decoder.context_gate.context_gate
            z = torch.sigmoid(g.gate(torch.cat([din, q, o], 1)))
            src, tgt = g.source_proj(o), g.target_proj(torch.cat([din, q], 1))
            if s.context_gate == "source":
                o = torch.tanh(tgt + z * src)
            elif s.context_gate == "target":
                o = torch.tanh(z * tgt + src)
            else:
                o = torch.tanh((1.0 - z) * tgt + z * src)
        nstate = tuple(rnn_state) + ((o.unsqueeze(0),) if s.input_feed else ())
        return o, nstate, p


# --------------------------------------------------------------------------
# JoeyNMT


class JoeyModel(ToolkitModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        s = self.sz
        C = 2 * s.h
        self.src_embed = _module(lut=nn.Embedding(s.Vs, s.E))
        self.trg_embed = _module(lut=nn.Embedding(s.Vt, s.Et))
        self.encoder = _module(rnn=_rnn(s.cell, s.E, s.h, s.Le, True))
        dec = nn.Module()
        dec.rnn = _rnn(s.cell, s.Et + (s.H if s.input_feed else 0), s.H, s.L)
        dec.att_vector_layer = nn.Linear(s.H + C, s.H, bias=True)
        dec.output_layer = nn.Linear(s.H, s.Vt, bias=False)
        att = nn.Module()
        att.key_layer = nn.Linear(C, s.H, bias=False)
        if s.arch == "joey-bahdanau":
            att.query_layer = nn.Linear(s.H, s.H, bias=False)
            att.energy_layer = nn.Linear(s.H, 1, bias=False)
        dec.attention = att
        if (s.bridge or "bridge") == "bridge":
            dec.bridge_layer = nn.Linear(C, s.H, bias=True)
        self.decoder = dec

    def _embed(self, lut, ids, scale):
        e = lut(ids)
        return e * math.sqrt(lut.embedding_dim) if scale else e

    def encode(self, ids, lengths):
        out, final = self.encoder_run(self._embed(self.src_embed.lut, ids, self.sz.scale_src), lengths)
        return out, self.init_states(final)

    def encoder_run(self, emb, lengths):
        """(encoder outputs, the top layer's [forward; backward] final
        hidden state [B, 2h])."""
        s = self.sz
        out, state = _packed(self.encoder.rnn, emb, lengths)
        h = state[0].view(s.Le, 2, emb.shape[0], s.h)
        return out, torch.cat([h[-1:, 0], h[-1:, 1]], dim=2).squeeze(0)

    def init_states(self, final):
        """The decoder's initial states from the encoder's final one."""
        s = self.sz
        B = final.shape[0]
        bridge = s.bridge or "bridge"
        if bridge == "bridge":
            h0 = torch.tanh(self.decoder.bridge_layer(final)).unsqueeze(0).repeat(s.L, 1, 1)
        elif bridge == "last":
            if final.shape[1] == 2 * s.H:
                final = final[:, :s.H]
            h0 = final.unsqueeze(0).repeat(s.L, 1, 1)
        else:
            h0 = final.new_zeros(s.L, B, s.H)
        st = (h0, h0) if s.cell == "lstm" else (h0,)
        if s.input_feed:
            st = st + (torch.zeros(1, B, s.H),)
        return st

    def step(self, ids, state, enc, lengths):
        lp, nstate, p, _ = self.step_embedded(self._embed(self.trg_embed.lut, ids, self.sz.scale_tgt), state, enc, lengths)
        return lp, nstate, p

    def step_embedded(self, emb, state, enc, lengths):
        """One decoder step from the embedded input [B, Et]: (log_probs,
        next state, attention, attentional vector)."""
        s = self.sz
        n = 2 if s.cell == "lstm" else 1
        x = emb.unsqueeze(1)
        if s.input_feed:
            x = torch.cat([x, state[n].transpose(0, 1)], dim=2)
        _, rnn_state = _run(self.decoder.rnn, x, state[:n])
        q = rnn_state[0][-1]
        att = self.decoder.attention
        keys = att.key_layer(enc)
        if s.arch == "joey-bahdanau":
            scores = att.energy_layer(torch.tanh(att.query_layer(q).unsqueeze(1) + keys)).squeeze(2)
        else:
            scores = torch.bmm(keys, q.unsqueeze(2)).squeeze(2)
        p = _softmax_masked(scores, lengths)
        ctx = torch.bmm(p.unsqueeze(1), enc).squeeze(1)
        vec = torch.tanh(self.decoder.att_vector_layer(torch.cat([q, ctx], 1)))
        lp = F.log_softmax(self.decoder.output_layer(vec), dim=-1)
        nstate = tuple(rnn_state) + ((vec.unsqueeze(0),) if s.input_feed else ())
        return lp, nstate, p, vec


# --------------------------------------------------------------------------
# fairseq


class FairseqModel(ToolkitModel):
    """fairseq's LSTMModel (fairseq/models/lstm.py) as it generates: no
    dropout, the source packed, the decoder a stack of LSTMCells fed
    [embedding; input_feed], AttentionLayer's dot scores over
    input_proj(h) (or no attention), then additional_fc and fc_out (or the
    tied decoder embedding)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        s = self.sz
        D = 2 if s.bi else 1
        C = D * s.h
        self.C = C
        self.encoder = _module(embed_tokens=nn.Embedding(s.Vs, s.E), lstm=_rnn("lstm", s.E, s.h, s.Le, s.bi))
        dec = _module(embed_tokens=nn.Embedding(s.Vt, s.Et),
                      layers=nn.ModuleList([nn.LSTMCell(s.Et + s.H if i == 0 else s.H, s.H) for i in range(s.L)]))
        if C != s.H:
            dec.encoder_hidden_proj = nn.Linear(C, s.H)
            dec.encoder_cell_proj = nn.Linear(C, s.H)
        if s.arch == "fairseq-lstm":
            dec.attention = _module(input_proj=nn.Linear(s.H, C, bias=False), output_proj=nn.Linear(s.H + C, s.H, bias=False))
        if s.Eo != s.H:
            dec.additional_fc = nn.Linear(s.H, s.Eo)
        if not s.tied:
            dec.fc_out = nn.Linear(s.Eo, s.Vt)
        self.decoder = dec

    def encode(self, ids, lengths):
        s = self.sz
        out, (h, c) = _packed(self.encoder.lstm, self.encoder.embed_tokens(ids), lengths)
        state = []
        for st in (h, c):
            if s.bi:
                # combine_bidir: each layer's forward and backward side by side
                st = st.view(s.Le, 2, ids.shape[0], s.h).transpose(1, 2).reshape(s.Le, ids.shape[0], 2 * s.h)
            if self.C != s.H:
                proj = self.decoder.encoder_hidden_proj if not state else self.decoder.encoder_cell_proj
                st = proj(st)
            state.append(st)
        return out, (state[0], state[1], torch.zeros(1, ids.shape[0], s.H))

    def step(self, ids, state, enc, lengths):
        s = self.sz
        d = self.decoder
        x = torch.cat([d.embed_tokens(ids), state[2][0]], 1)
        hs, cs = [], []
        for i, cell in enumerate(d.layers):
            h, c = cell(x, (state[0][i], state[1][i]))
            hs.append(h)
            cs.append(c)
            x = h
        q = hs[-1]
        if s.arch == "fairseq-lstm":
            key = d.attention.input_proj(q)
            p = _softmax_masked((enc * key.unsqueeze(1)).sum(2), lengths)
            ctx = (p.unsqueeze(2) * enc).sum(1)
            out = torch.tanh(d.attention.output_proj(torch.cat([ctx, q], 1)))
        else:
            out, p = q, torch.zeros(enc.shape[0], enc.shape[1])
        feats = d.additional_fc(out) if s.Eo != s.H else out
        logits = F.linear(feats, d.embed_tokens.weight) if s.tied else d.fc_out(feats)
        return F.log_softmax(logits, dim=-1), (torch.stack(hs), torch.stack(cs), out.unsqueeze(0)), p


# --------------------------------------------------------------------------
# bentrevett/pytorch-seq2seq tutorial 3/4

# Each era's names -> the 2020 names this module uses.
BENTREVETT_ERAS = {
    "2023": {"decoder.attention.attn_fc.weight": "decoder.attention.attn.weight",
             "decoder.attention.attn_fc.bias": "decoder.attention.attn.bias",
             "decoder.attention.v_fc.weight": "decoder.attention.v.weight"},
    "2018": {"decoder.out.weight": "decoder.fc_out.weight", "decoder.out.bias": "decoder.fc_out.bias"},
}


def bentrevett_2020_names(state):
    """A state_dict of any era under the 2020 names (v [H] becomes [1, H])."""
    out = dict(state)
    for names in BENTREVETT_ERAS.values():
        for old, new in names.items():
            if old in out:
                out[new] = out.pop(old)
    if "decoder.attention.v" in out:
        out["decoder.attention.v.weight"] = out.pop("decoder.attention.v").unsqueeze(0)
    return out


def bentrevett_config(state):
    state = bentrevett_2020_names(state)
    Vs, E = state["encoder.embedding.weight"].shape
    Vt, Et = state["decoder.embedding.weight"].shape
    h = state["encoder.rnn.weight_hh_l0"].shape[1]
    H = state["encoder.fc.weight"].shape[0]
    return {"arch": "bentrevett", "cell": "gru", "hidden_size": H, "embedding_size": E, "tgt_embedding_size": Et,
            "num_layers": 1, "encoder_layers": 1, "encoder_hidden_size": h, "bidirectional": True,
            "src_vocab_size": Vs, "tgt_vocab_size": Vt}


class BentrevettModel(ToolkitModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        s = self.sz
        self.encoder = _module(embedding=nn.Embedding(s.Vs, s.E), rnn=nn.GRU(s.E, s.h, bidirectional=True),
                               fc=nn.Linear(2 * s.h, s.H))
        att = _module(attn=nn.Linear(2 * s.h + s.H, s.H), v=nn.Linear(s.H, 1, bias=False))
        self.decoder = _module(attention=att, embedding=nn.Embedding(s.Vt, s.Et), rnn=nn.GRU(2 * s.h + s.Et, s.H),
                               fc_out=nn.Linear(2 * s.h + s.H + s.Et, s.Vt))

    def encode(self, ids, lengths):
        emb = self.encoder.embedding(ids.t())  # [S, B, E]: the tutorial is sequence-first
        packed = pack_padded_sequence(emb, lengths.cpu(), enforce_sorted=False)
        out, hidden = self.encoder.rnn(packed)
        out, _ = pad_packed_sequence(out, total_length=ids.shape[1])
        hidden = torch.tanh(self.encoder.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return out.transpose(0, 1), (hidden.unsqueeze(0),)

    def step(self, ids, state, enc, lengths):
        d = self.decoder
        hidden = state[0][0]  # [B, H]
        S = enc.shape[1]
        rep = hidden.unsqueeze(1).repeat(1, S, 1)
        energy = torch.tanh(d.attention.attn(torch.cat((rep, enc), dim=2)))
        a = _softmax_masked(d.attention.v(energy).squeeze(2), lengths)
        embedded = d.embedding(ids).unsqueeze(0)  # [1, B, Et]
        weighted = torch.bmm(a.unsqueeze(1), enc).permute(1, 0, 2)  # [1, B, C]
        output, h = d.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        pred = d.fc_out(torch.cat((output.squeeze(0), weighted.squeeze(0), embedded.squeeze(0)), dim=1))
        return F.log_softmax(pred, dim=-1), (h,), a


# --------------------------------------------------------------------------
# PyTorch chatbot tutorial


class ChatbotModel(ToolkitModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        s = self.sz
        self.score = s.arch.split("-", 1)[1]
        self.embedding = nn.Embedding(s.Vs, s.H)
        self.encoder = _module(gru=nn.GRU(s.H, s.H, s.Le, bidirectional=True))
        att = nn.Module()
        if self.score == "general":
            att.attn = nn.Linear(s.H, s.H)
        elif self.score == "concat":
            att.attn = nn.Linear(2 * s.H, s.H)
            att.v = nn.Parameter(torch.empty(s.H).uniform_(-0.1, 0.1))
        self.decoder = _module(gru=nn.GRU(s.H, s.H, s.L), attn=att, concat=nn.Linear(2 * s.H, s.H), out=nn.Linear(s.H, s.Vt))

    def state_dict_as_saved(self):
        """The tutorial's checkpoint entries: en, de and embedding."""
        sd = self.state_dict()
        en = {"embedding.weight": sd["embedding.weight"]}
        en.update({k[len("encoder."):]: v for k, v in sd.items() if k.startswith("encoder.")})
        de = {"embedding.weight": sd["embedding.weight"]}
        de.update({k[len("decoder."):]: v for k, v in sd.items() if k.startswith("decoder.")})
        return en, de, {"weight": sd["embedding.weight"]}

    def encode(self, ids, lengths):
        emb = self.embedding(ids.t())
        packed = pack_padded_sequence(emb, lengths.cpu(), enforce_sorted=False)
        out, hidden = self.encoder.gru(packed)
        out, _ = pad_packed_sequence(out, total_length=ids.shape[1])
        H = self.sz.H
        out = out[:, :, :H] + out[:, :, H:]
        return out.transpose(0, 1), (hidden[:self.sz.L],)

    def step(self, ids, state, enc, lengths):
        d = self.decoder
        out, h = d.gru(self.embedding(ids).unsqueeze(0), state[0])
        q = out[0]  # [B, H]
        if self.score == "dot":
            scores = torch.sum(q.unsqueeze(1) * enc, dim=2)
        elif self.score == "general":
            scores = torch.sum(q.unsqueeze(1) * d.attn.attn(enc), dim=2)
        else:
            e = d.attn.attn(torch.cat((q.unsqueeze(1).expand(-1, enc.shape[1], -1), enc), 2)).tanh()
            scores = torch.sum(d.attn.v * e, dim=2)
        a = _softmax_masked(scores, lengths)
        ctx = torch.bmm(a.unsqueeze(1), enc).squeeze(1)
        co = torch.tanh(d.concat(torch.cat((q, ctx), 1)))
        return F.log_softmax(d.out(co), dim=1), (h,), a


# --------------------------------------------------------------------------
# Building, loading, the reference interface


def build(cfg):
    arch = cfg["arch"]
    if arch in ONMT_ARCHS:
        return OpenNMTModel(cfg)
    if arch in JOEY_ARCHS:
        return JoeyModel(cfg)
    if arch == "bentrevett":
        return BentrevettModel(cfg)
    if arch in CHATBOT_ARCHS:
        return ChatbotModel(cfg)
    if arch in FAIRSEQ_ARCHS:
        return FairseqModel(cfg)
    raise ToolkitError("unknown toolkit architecture %r (want one of %s)" % (arch, ", ".join(TOOLKIT_ARCHS)))


def checkpoint_names(model, state):
    """A checkpoint's tensors (as the Go reader names them) under the
    model's parameter names."""
    if isinstance(model, BentrevettModel):
        return bentrevett_2020_names(state)
    if isinstance(model, ChatbotModel):
        out = {k: v for k, v in state.items() if k not in ("encoder.embedding.weight", "decoder.embedding.weight")}
        if "embedding.weight" not in out and "encoder.embedding.weight" in state:
            out["embedding.weight"] = state["encoder.embedding.weight"]
        return out
    return state


def load(cfg, state):
    model = build(cfg)
    state = checkpoint_names(model, state)
    expected = model.state_dict()
    missing = sorted(k for k in expected if k not in state)
    unexpected = sorted(k for k in state if k not in expected)
    if missing or unexpected:
        raise ToolkitError("checkpoint keys do not match a %s model: missing %s, unexpected %s" % (cfg["arch"], missing, unexpected))
    for k, v in state.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ToolkitError("%s has shape %s, want %s" % (k, list(v.shape), list(expected[k].shape)))
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    return model.eval()


def load_model(path):
    """Load a checkpoint (.pt or .safetensors): a model of the spec, its
    config inferred from the keys (attnx_reference.model_from_state_dict),
    or a toolkit model, its config taken from the safetensors metadata
    (or, for bentrevett's tutorial, from its keys)."""
    cfg = None
    if path.endswith(".safetensors") and os.path.exists(path):
        state, meta = ref.read_safetensors(path)
        if meta and ref.CONFIG_METADATA in meta:
            cfg = json.loads(meta[ref.CONFIG_METADATA])
    else:
        state = ref.load_state(path)
    if cfg is None and "decoder.attention.attn.weight" in bentrevett_2020_names(state) \
            and "encoder.fc.weight" in state:
        cfg = bentrevett_config(state)
    if cfg is not None and cfg.get("arch") in TOOLKIT_ARCHS:
        try:
            return Reference(load(cfg, state))
        except ToolkitError as e:
            raise ref.ReferenceError(str(e))
    return ref.model_from_state_dict(state)


class _Fn:
    def __init__(self, fn, output_size):
        self.fn, self.output_size = fn, output_size

    def __call__(self, *a):
        return self.fn(*a)


class Reference:
    """A toolkit model behind attnx_reference's interface (encoder, decoder,
    config, state_names), as run_steps, greedy_decode and beam_search use
    it."""

    def __init__(self, model):
        self.model = model
        self.encoder = _Fn(model.encode, model.output_size)
        self.decoder = _Fn(model.step, model.output_size)
        self.state_names = model.state_names
        self.config = model.config

    def eval(self):
        return self

    def double(self):
        import copy
        return Reference(copy.deepcopy(self.model).double())


def randomize(model, seed, std=0.5):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return model


# --------------------------------------------------------------------------
# Saving as the toolkits save


def onmt_opt(cfg, version=3):
    """An argparse.Namespace with the options OpenNMT-py's model builder
    reads for this config."""
    s = _Sizes(cfg)
    o = argparse.Namespace()
    o.model_type = "text"
    o.encoder_type = "brnn" if s.bi else "rnn"
    o.decoder_type = "rnn"
    o.rnn_type = s.cell.upper()
    o.enc_layers, o.dec_layers = s.Le, s.L
    if version >= 3:
        o.enc_hid_size = o.dec_hid_size = s.H
    else:
        o.rnn_size = s.H
    o.src_word_vec_size, o.tgt_word_vec_size = s.E, s.Et
    o.word_vec_size = s.E if s.E == s.Et else -1
    o.input_feed = 1 if s.input_feed else 0
    o.global_attention = s.arch.split("-", 1)[1]
    o.global_attention_function = "softmax"
    o.bridge = s.bridge == "relu-linear"
    o.coverage_attn = s.coverage
    o.context_gate = s.context_gate or None
    o.copy_attn = bool(s.copy)
    o.reuse_copy_attn = s.copy == "reuse"
    o.copy_attn_type = s.copy if s.copy not in ("", "reuse") else None
    o.position_encoding = False
    o.feat_merge = "concat"
    o.share_decoder_embeddings = False
    o.share_embeddings = False
    o.dropout = [0.3]
    o.attention_dropout = [0.1]
    return o


def onmt_vocab(n, side, version=3):
    """A vocabulary list of n tokens as OpenNMT-py builds it: specials first."""
    if version >= 3:
        specials = ["<unk>", "<blank>", "<s>", "</s>"]
    else:
        specials = ["<unk>", "<blank>"] + (["<s>", "</s>"] if side == "tgt" else [])
    words = ["%s%d" % ("w" if side == "src" else "t", i) for i in range(n - len(specials))]
    return (specials + words)[:n]


def save_onmt_v3(model, path, src_vocab, tgt_vocab, safetensors_step=None, opt_extra=None):
    """OpenNMT-py 3.x's checkpoint dict; with safetensors_step the weights go
    to <base>_step_N.safetensors beside it (its trainer's naming) and the .pt
    holds vocab, opt and optim only. opt_extra sets more options (the data
    transforms: transforms, src_subword_model, tgt_subword_model)."""
    sd = model.state_dict()
    ckpt = {"model": {k: v for k, v in sd.items() if not k.startswith("generator.")},
            "generator": {k[len("generator."):]: v for k, v in sd.items() if k.startswith("generator.")},
            "vocab": {"src": list(src_vocab), "tgt": list(tgt_vocab), "data_task": "seq2seq", "decoder_start_token": "<s>"},
            "opt": onmt_opt(model.cfg, 3), "optim": {"step": 10}}
    for k, v in (opt_extra or {}).items():
        setattr(ckpt["opt"], k, v)
    if safetensors_step is not None:
        base = path[:-3] if path.endswith(".pt") else path
        ref.write_safetensors("%s_step_%d.safetensors" % (base, safetensors_step), {k: v.contiguous() for k, v in sd.items()})
        ckpt["model"], ckpt["generator"] = None, None
    torch.save(ckpt, path)


def _fake_module(name, **classes):
    """Registers a module called name with the given classes, so that pickle
    names them as the real ones would be named (torchtext 0.5's Field,
    OpenNMT-py 2's TextMultiField): the test writes v2 checkpoints without
    either installed."""
    parts = name.split(".")
    for i in range(1, len(parts)):
        parent = ".".join(parts[:i])
        if parent not in sys.modules:
            sys.modules[parent] = types.ModuleType(parent)
    mod = types.ModuleType(name)
    for cname, cls in classes.items():
        cls.__module__, cls.__qualname__, cls.__name__ = name, cname, cname
        setattr(mod, cname, cls)
    sys.modules[name] = mod
    return mod


def save_onmt_v2(model, path, src_vocab, tgt_vocab):
    """OpenNMT-py 2.x's checkpoint: generator keys 0.weight/0.bias, vocab as
    torchtext 0.5 Fields (read by attnx through stand-ins for their itos)."""
    class Vocab:  # noqa: D401 - a stand-in with torchtext's pickled state
        pass

    class Field:
        pass

    class TextMultiField:
        pass
    _fake_module("torchtext.vocab", Vocab=Vocab)
    _fake_module("torchtext.data.field", Field=Field)
    _fake_module("onmt.inputters.text_dataset", TextMultiField=TextMultiField)

    def field(itos, init=None, eos=None):
        v = Vocab()
        from collections import Counter
        v.itos, v.stoi, v.freqs, v.unk_index = list(itos), {t: i for i, t in enumerate(itos)}, Counter(itos), 0
        f = Field()
        f.vocab, f.init_token, f.eos_token, f.pad_token, f.unk_token = v, init, eos, "<blank>", "<unk>"
        f.sequential, f.lower = True, False
        m = TextMultiField()
        m.base_name, m.fields = "src", [("src", f)]
        return m
    sd = model.state_dict()
    ckpt = {"model": {k: v for k, v in sd.items() if not k.startswith("generator.")},
            "generator": {"0." + k[len("generator."):]: v for k, v in sd.items() if k.startswith("generator.")},
            "vocab": {"src": field(src_vocab), "tgt": field(tgt_vocab, "<s>", "</s>")},
            "opt": onmt_opt(model.cfg, 2), "optim": {"step": 10}}
    torch.save(ckpt, path)


def save_joey(model, model_dir, src_vocab, trg_vocab, version="2.3.0", scale=False):
    """JoeyNMT's model directory: best.ckpt (model_state and training state),
    config.yaml naming the vocabulary files (relative paths) and the files."""
    s = model.sz
    os.makedirs(model_dir, exist_ok=True)
    torch.save({"model_state": model.state_dict(), "optimizer_state": {}, "scheduler_state": None, "steps": 100,
                "total_tokens": 1000, "best_ckpt_score": 1.0, "best_ckpt_iteration": 100}, os.path.join(model_dir, "best.ckpt"))
    for name, vocab in (("src_vocab.txt", src_vocab), ("trg_vocab.txt", trg_vocab)):
        with open(os.path.join(model_dir, name), "w") as f:
            f.write("\n".join(vocab) + "\n")

    def emb(size, sc):
        return "            embedding_dim: %d\n            scale: %s\n" % (size, "true" if sc else "false")
    cfg = ("name: \"attnx test\"\n%s"
           "data:\n    src:\n        lang: \"de\"\n        voc_file: \"src_vocab.txt\"\n        level: \"word\"\n"
           "    trg:\n        lang: \"en\"\n        voc_file: \"trg_vocab.txt\"\n        level: \"word\"\n"
           "model:\n    tied_embeddings: false\n"
           "    encoder:\n        type: \"recurrent\"\n        rnn_type: \"%s\"\n        embeddings:\n%s"
           "        hidden_size: %d\n        bidirectional: true\n        num_layers: %d\n"
           "    decoder:\n        type: \"recurrent\"\n        rnn_type: \"%s\"\n        embeddings:\n%s"
           "        hidden_size: %d\n        attention: \"%s\"\n        num_layers: %d\n"
           "        input_feeding: %s\n        init_hidden: \"%s\"\n") % (
        ("joeynmt_version: \"%s\"\n" % version) if version else "", s.cell, emb(s.E, scale), s.h, s.Le, s.cell, emb(s.Et, scale), s.H, s.arch.split("-", 1)[1], s.L,
        "true" if s.input_feed else "false", s.bridge or "bridge")
    with open(os.path.join(model_dir, "config.yaml"), "w") as f:
        f.write(cfg)


def save_fairseq(model, model_dir, src_vocab, tgt_vocab):
    """What fairseq-train leaves: checkpoint_best.pt as
    checkpoint_utils.save_state writes it (cfg a plain dict whose model
    entry is an argparse.Namespace, as for the legacy-registered LSTMs;
    args None; the optimizer history), beside the data-bin dictionaries
    dict.src.txt and dict.tgt.txt ("symbol count" lines after fairseq's
    four specials)."""
    s = model.sz
    os.makedirs(model_dir, exist_ok=True)
    ns = argparse.Namespace(
        _name="lstm", arch="lstm", criterion="cross_entropy", encoder_embed_dim=s.E, decoder_embed_dim=s.Et,
        encoder_hidden_size=s.h, decoder_hidden_size=s.H, encoder_layers=s.Le, decoder_layers=s.L,
        encoder_bidirectional=s.bi, decoder_out_embed_dim=s.Eo, decoder_attention="0" if s.arch == "fairseq-lstm-noattn" else "1",
        share_decoder_input_output_embed=s.tied, share_all_embeddings=False, adaptive_softmax_cutoff="10000,50000,200000",
        dropout=0.1, max_source_positions=1024, max_target_positions=1024)
    cfg = {"_name": None, "model": ns, "bpe": None, "tokenizer": None,
           "task": {"_name": "translation", "data": "data-bin", "source_lang": "src", "target_lang": "tgt"}}
    torch.save({"args": None, "cfg": cfg, "model": model.state_dict(), "criterion": {},
                "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam", "num_updates": 100}],
                "task_state": {}, "extra_state": {"epoch": 2}, "last_optimizer_state": None},
               os.path.join(model_dir, "checkpoint_best.pt"))
    for lang, vocab in (("src", src_vocab), ("tgt", tgt_vocab)):
        with open(os.path.join(model_dir, "dict.%s.txt" % lang), "w") as f:
            f.write("".join("%s %d\n" % (w, 100 - i) for i, w in enumerate(vocab[4:])))


def save_bentrevett(model, path, era="2020"):
    """The tutorial's state_dict under one era's key names."""
    sd = dict(model.state_dict())
    if era in ("2018", "2019"):
        sd["decoder.attention.v"] = sd.pop("decoder.attention.v.weight")[0].clone()
    if era == "2018":
        sd["decoder.out.weight"] = sd.pop("decoder.fc_out.weight")
        sd["decoder.out.bias"] = sd.pop("decoder.fc_out.bias")
    if era == "2023":
        for old, new in BENTREVETT_ERAS["2023"].items():
            sd[old] = sd.pop(new)
    torch.save(sd, path)


def save_chatbot(model, path, words):
    """The tutorial's checkpoint dict (its hosted 4000_checkpoint.tar): en,
    de, embedding and voc_dict (PAD 0, SOS 1, EOS 2)."""
    en, de, emb = model.state_dict_as_saved()
    index2word = {0: "PAD", 1: "SOS", 2: "EOS"}
    for i, w in enumerate(words):
        index2word[i + 3] = w
    voc = {"name": "cornell movie-dialogs corpus", "trimmed": True,
           "word2index": {w: i + 3 for i, w in enumerate(words)}, "word2count": {w: 1 for w in words},
           "index2word": index2word, "num_words": len(index2word)}
    torch.save({"iteration": 4000, "en": en, "de": de, "en_opt": {}, "de_opt": {}, "loss": 1.0,
                "voc_dict": voc, "embedding": emb}, path)


# --------------------------------------------------------------------------
# Each toolkit's own way of decoding text (batch 1), for the tests that show
# attnx's translate applies the same source wrapping, start token, bans and
# stopping rule. Written from each toolkit's translation code as documented
# in docs/toolkits.md.


@torch.no_grad()
def toolkit_decode(model, text, src_itos, tgt_itos, max_len, joey_version="2.3.0"):
    """Greedy decoding of one sentence the way its toolkit does it; returns
    the output token ids (EOS included when reached)."""
    arch = model.sz.arch
    words = text.split()
    s = {t: i for i, t in enumerate(src_itos)}
    t = {w: i for i, w in enumerate(tgt_itos)}
    banned, eos_from = [], 0
    if arch in ONMT_ARCHS:
        # OpenNMT-py: the source's tokens alone; decoding starts with the
        # vocab's decoder_start_token <s> and ends at </s> or max_length.
        src, sos, eos = [s[w] for w in words], t["<s>"], t["</s>"]
    elif arch in JOEY_ARCHS:
        # JoeyNMT: </s> appended to the source; 2.3 bans <s> and <pad> in
        # greedy search; 2.x does not end at the first step.
        src, sos, eos = [s[w] for w in words] + [s["</s>"]], t["<s>"], t["</s>"]
        # a config without joeynmt_version was written by 1.x
        major, minor = (int(x) for x in ((joey_version or "1.0").split(".") + ["0"])[:2])
        if (major, minor) >= (2, 3):
            banned = [t["<s>"], t["<pad>"]]
        if major >= 2:
            eos_from = 1
    elif arch == "bentrevett":
        # translate_sentence: <sos> + tokens + <eos>; the output starts
        # with <sos> and stops at <eos>.
        src, sos, eos = [s["<sos>"]] + [s[w] for w in words] + [s["<eos>"]], t["<sos>"], t["<eos>"]
    else:
        # the chatbot's indexesFromSentence appends EOS; its searcher runs
        # max_length steps from SOS; the reply ends at EOS.
        src, sos, eos = [s[w] for w in words] + [s["EOS"]], t["SOS"], t["EOS"]
    ids = torch.tensor([src])
    lens = torch.tensor([len(src)])
    enc, state = model.encode(ids, lens)
    inp, out = torch.tensor([sos]), []
    for step in range(max_len):
        lp, state, _ = model.step(inp, state, enc, lens)
        lp = lp.clone()
        for b in banned:
            lp[0, b] = float("-inf")
        if step < eos_from:
            lp[0, eos] = float("-inf")
        tok = int(lp[0].argmax())
        out.append(tok)
        if tok == eos:
            break
        inp = torch.tensor([tok])
    return out
