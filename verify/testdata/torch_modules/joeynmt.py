"""A JoeyNMT recurrent model with JoeyNMT 2's module API, for attnx's tests
of `verify --torch-module` (attnx's own reference model, reference/
toolkits.py, behind that API; not JoeyNMT's code):
    out, hidden = model.encoder(model.src_embed(src), src_length, src_mask)
    hidden0 = model.decoder._init_hidden(hidden)          # [L, B, H], or (h, c)
    outputs, hidden, att_probs, att_vectors = model.decoder(trg_embed=,
        encoder_output=, encoder_hidden=, src_mask=, unroll_steps=1,
        hidden=batch-first, prev_att_vector=)
Key names as JoeyNMT's."""
import torch

import toolkits


class _Embed(torch.nn.Module):
    def forward(self, x):
        return self._owner._embed(self.lut, x, self._scale)


class _Encoder(torch.nn.Module):
    def forward(self, embed_src, src_length, mask):
        return self._owner.encoder_run(embed_src, src_length)


class _Decoder(torch.nn.Module):
    def _init_hidden(self, final):
        st = self._owner.init_states(final)
        n = self._owner.n
        return tuple(st[:n]) if n > 1 else st[0]

    def forward(self, trg_embed, encoder_output, encoder_hidden, src_mask, unroll_steps, hidden=None, prev_att_vector=None, **kw):
        owner = self._owner
        hidden = hidden if isinstance(hidden, tuple) else (hidden,)
        state = tuple(h.permute(1, 0, 2) for h in hidden)  # batch-first in, as JoeyNMT passes it
        if owner.sz.input_feed:
            state += (prev_att_vector.transpose(0, 1),)
        lengths = src_mask.sum(dim=2).reshape(-1)
        lp, nstate, p, vec = owner.step_embedded(trg_embed[:, 0], state, encoder_output, lengths)
        hid = tuple(h.permute(1, 0, 2) for h in nstate[:owner.n])
        return lp.unsqueeze(1), hid if owner.n > 1 else hid[0], p.unsqueeze(1), vec.unsqueeze(1)


def build(config):
    m = toolkits.JoeyModel(config)
    object.__setattr__(m, "n", 2 if config["cell"] == "lstm" else 1)
    for emb, scale in ((m.src_embed, m.sz.scale_src), (m.trg_embed, m.sz.scale_tgt)):
        emb.__class__ = _Embed
        object.__setattr__(emb, "_owner", m)
        object.__setattr__(emb, "_scale", scale)
    m.encoder.__class__, m.decoder.__class__ = _Encoder, _Decoder
    object.__setattr__(m.encoder, "_owner", m)
    object.__setattr__(m.decoder, "_owner", m)
    return m
