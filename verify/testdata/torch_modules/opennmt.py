"""An OpenNMT-py RNN model with OpenNMT-py 3's module API, for attnx's tests
of `verify --torch-module` (attnx's own reference model, reference/
toolkits.py, behind that API; not OpenNMT-py's code):
    enc_out, enc_final, src_len = model.encoder(src [B, S, 1], src_len)
    model.decoder.init_state(src, enc_out, enc_final); model.decoder.state
    dec_out, attns = model.decoder(tgt [B, 1, 1], enc_out, src_len=, step=)
    logits = model.generator(dec_out)
Key names as OpenNMT-py's."""
import torch

import toolkits


class _Encoder(torch.nn.Module):
    def forward(self, src, src_len):
        # enc_final: here the decoder's initial states already
        enc, state = self._owner.encode(src[:, :, 0], src_len)
        return enc, state, src_len


class _Decoder(torch.nn.Module):
    def init_state(self, src, enc_out, enc_final):
        n = self._owner.n
        self.state = {"hidden": tuple(enc_final[:n]), "input_feed": enc_final[n] if len(enc_final) > n else None}

    def forward(self, tgt, enc_out, src_len=None, step=None):
        n = self._owner.n
        state = tuple(self.state["hidden"]) + ((self.state["input_feed"],) if self.state["input_feed"] is not None else ())
        o, nstate, p = self._owner.features(tgt[:, 0, 0], state, enc_out, src_len)
        self.state["hidden"] = nstate[:n]
        if len(nstate) > n:
            self.state["input_feed"] = nstate[n]
        return o.unsqueeze(1), {"std": p.unsqueeze(1)}


def build(config):
    m = toolkits.OpenNMTModel(config)
    object.__setattr__(m, "n", 2 if config["cell"] == "lstm" else 1)
    m.encoder.__class__, m.decoder.__class__ = _Encoder, _Decoder
    object.__setattr__(m.encoder, "_owner", m)
    object.__setattr__(m.decoder, "_owner", m)
    return m
