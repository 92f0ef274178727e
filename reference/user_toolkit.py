"""`attnx verify --torch-module FILE.py` for models of the tutorials people
copy and change: bentrevett/pytorch-seq2seq's tutorial 3/4 and PyTorch's
chatbot tutorial. FILE.py's own classes (the tutorial's, as changed) are
the oracle, called the way the tutorial calls them, one sentence at a time;
what they compute is written as `reference.py run` writes it, states by
decoder.onnx's names.

What FILE.py must define
------------------------

    def build(config):
        return model       # bentrevett: the Seq2Seq (with .encoder, .decoder)
        return enc, dec    # chatbot: EncoderRNN, LuongAttnDecoderRNN (sharing the embedding)

config is attnx.json's model fields (arch, cell, hidden_size,
embedding_size, ...) plus sos and eos.

bentrevett (arch bentrevett): the state_dict keys are the checkpoint's
(encoder.*, decoder.*, whatever era). Called as the tutorial does:
    outputs, hidden = model.encoder(src [S, 1])          (tutorial 3)
    outputs, hidden = model.encoder(src [S, 1], len [1]) (tutorial 4)
    prediction, hidden[, a] = model.decoder(input [1], hidden, outputs[, mask [1, S]])
log_probs = log_softmax(prediction); the attention is the third output, or
what the decoder's `attention` module returns.

chatbot (arch chatbot-*): the encoder's keys are the checkpoint's en entry
(encoder.*), the decoder's its de entry (decoder.*). Called as the
tutorial's GreedySearchDecoder does:
    outputs, hidden = enc(input_seq [S, 1], lengths [1])
    output, hidden = dec(input_step [1, 1], hidden[:L], outputs)
log_probs = log_softmax of what the decoder's `out` module returns (the
tutorial's softmax output would underflow to log 0); the attention is what
its `attn` module returns.
"""

import inspect

import torch
import torch.nn.functional as F

import attnx_reference as ref
import user_module
from attnx_reference import ReferenceError

BENTREVETT = "bentrevett"
CHATBOT = "chatbot"
OPENNMT = "opennmt"
JOEY = "joey"


def convention(arch):
    if arch == "bentrevett":
        return BENTREVETT
    if arch.startswith("chatbot-"):
        return CHATBOT
    if arch.startswith("onmt-"):
        return OPENNMT
    if arch.startswith("joey-"):
        return JOEY
    return None


def _load(module, state, what, path):
    own = module.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ReferenceError("--module %s: your %s's keys differ from the checkpoint's: missing from the checkpoint %s, not in your module %s"
                             % (path, what, missing, unexpected))
    # torch's own load_state_dict: OpenNMT-py's models override it with
    # one that takes the checkpoint dict.
    torch.nn.Module.load_state_dict(module, state, strict=True)


def build(path, mod, config, weights):
    """The user's modules with the weights loaded, for the convention."""
    conv = convention(config["arch"])
    try:
        built = mod.build(dict(config))
    except Exception as e:
        raise ReferenceError("--module %s: build(config) raised %s: %s" % (path, type(e).__name__, e))
    if conv in (OPENNMT, JOEY):
        if not isinstance(built, torch.nn.Module):
            raise ReferenceError("--module %s: build(config) must return the toolkit's model (one torch.nn.Module)" % path)
        _load(built, weights, "model", path)
        return built.eval(), None
    if conv == BENTREVETT:
        if isinstance(built, (tuple, list)) and len(built) == 2:
            enc, dec = built
            model = torch.nn.Module()
            model.encoder, model.decoder = enc, dec
        else:
            model = built
        if not all(isinstance(getattr(model, a, None), torch.nn.Module) for a in ("encoder", "decoder")):
            raise ReferenceError("--module %s: build(config) must return the Seq2Seq (with .encoder and .decoder) or (encoder, decoder)" % path)
        _load(model, weights, "Seq2Seq", path)
        return model.encoder.eval(), model.decoder.eval()
    if not (isinstance(built, (tuple, list)) and len(built) == 2):
        raise ReferenceError("--module %s: build(config) must return (encoder, decoder), the tutorial's EncoderRNN and LuongAttnDecoderRNN" % path)
    enc, dec = built
    parts = {"encoder": {}, "decoder": {}}
    for k, v in weights.items():
        side, _, rest = k.partition(".")
        if side in parts:
            parts[side][rest] = v
    _load(enc, parts["encoder"], "encoder", path)
    _load(dec, parts["decoder"], "decoder", path)
    return enc.eval(), dec.eval()


class _Capture:
    """The last output of a submodule, through a forward hook."""

    def __init__(self, module):
        self.value = None
        self.hook = module.register_forward_hook(self._record) if module is not None else None

    def _record(self, _module, _inputs, output):
        self.value = output


class ToolkitRow:
    """One sentence through a toolkit's own model (OpenNMT-py 3, JoeyNMT
    2), called as the toolkit's translator calls it."""

    def __init__(self, conv, model, ids, config):
        self.conv, self.model, self.config = conv, model, config
        self.n = len(ids)
        self.t = 0
        self.input_feed = bool(config.get("input_feed"))
        if conv == OPENNMT:
            src = torch.tensor([ids], dtype=torch.int64).unsqueeze(-1)  # [1, S, 1]
            self.lens = torch.tensor([self.n])
            out = model.encoder(src, self.lens)
            self.outputs, final = out[0], out[1]  # [1, S, C]
            model.decoder.init_state(src, self.outputs, final)
        else:
            src = torch.tensor([ids], dtype=torch.int64)
            self.lens = torch.tensor([self.n])
            self.mask = torch.ones(1, 1, self.n, dtype=torch.bool)
            self.outputs, self.enc_hidden = model.encoder(model.src_embed(src), self.lens, self.mask)
            h = model.decoder._init_hidden(self.enc_hidden)  # [L, 1, H], or (h, c)
            self.hidden = h if isinstance(h, tuple) else (h,)
            self.prev_att = torch.zeros(1, 1, config["hidden_size"])

    def encoder_outputs(self):
        return self.outputs[0]

    def states(self):
        """Every state in decoder.onnx's order, each [rows, width]."""
        if self.conv == OPENNMT:
            st = self.model.decoder.state
            out = tuple(h[:, 0] for h in st["hidden"])
            if self.input_feed:
                out += (st["input_feed"].reshape(1, -1),)
            return out
        out = tuple(h[:, 0] for h in self.hidden)
        if self.input_feed:
            out += (self.prev_att.reshape(1, -1),)
        return out

    def step(self, token):
        if self.conv == OPENNMT:
            dec_out, attns = self.model.decoder(torch.tensor([[[token]]]), self.outputs, src_len=self.lens, step=self.t)
            self.t += 1
            lp = F.log_softmax(self.model.generator(dec_out.reshape(1, -1)), dim=-1)
            return lp.reshape(-1), attns["std"]
        d = self.model.decoder
        hidden = tuple(h.permute(1, 0, 2).contiguous() for h in self.hidden)  # JoeyNMT passes it batch-first
        out, hidden, att_probs, att_vectors = d(trg_embed=self.model.trg_embed(torch.tensor([[token]])), encoder_output=self.outputs,
                                                encoder_hidden=self.enc_hidden, src_mask=self.mask, unroll_steps=1,
                                                hidden=hidden if len(hidden) > 1 else hidden[0], prev_att_vector=self.prev_att)
        hidden = hidden if isinstance(hidden, tuple) else (hidden,)
        self.hidden = tuple(h.permute(1, 0, 2).contiguous() for h in hidden)
        self.prev_att = att_vectors
        return F.log_softmax(out.reshape(1, -1), dim=-1).reshape(-1), att_probs


class Row:
    """One sentence through the user's tutorial modules."""

    def __init__(self, conv, enc, dec, ids, config):
        self.conv, self.enc, self.dec, self.config = conv, enc, dec, config
        self.n = len(ids)
        src = torch.tensor(ids, dtype=torch.int64).unsqueeze(1)  # [S, 1]: the tutorials are sequence-first
        lens = torch.tensor([self.n])
        if conv == BENTREVETT:
            nargs = len(inspect.signature(enc.forward).parameters)
            outputs, hidden = enc(src, lens) if nargs >= 2 else enc(src)
            self.masked = "mask" in inspect.signature(dec.forward).parameters
            self.mask = torch.ones(1, self.n, dtype=torch.bool)
            self.attn = _Capture(getattr(dec, "attention", None))
            self.outputs, self.hidden = outputs, hidden  # [S, 1, C], [1, H]
        else:
            outputs, hidden = enc(src, lens)
            self.outputs, self.hidden = outputs, hidden[:config["num_layers"]]
            self.attn = _Capture(getattr(dec, "attn", None))
            self.logits = _Capture(getattr(dec, "out", None))
        if self.attn.hook is None:
            raise ReferenceError("your decoder has no %s module to read the attention from" % ("attention" if conv == BENTREVETT else "attn"))

    def encoder_outputs(self):
        return self.outputs[:, 0]  # [S, C]

    def states(self):
        """(hidden [rows, width]) in decoder.onnx's order."""
        h = self.hidden
        return (h.reshape(-1, h.shape[-1]),)

    def step(self, token):
        if self.conv == BENTREVETT:
            inp = torch.tensor([token], dtype=torch.int64)
            r = self.dec(inp, self.hidden, self.outputs, self.mask) if self.masked else self.dec(inp, self.hidden, self.outputs)
            prediction, self.hidden = r[0], r[1]
            attn = r[2] if len(r) > 2 else self.attn.value
            lp = F.log_softmax(prediction.reshape(1, -1), dim=-1)
        else:
            _, self.hidden = self.dec(torch.tensor([[token]], dtype=torch.int64), self.hidden, self.outputs)
            if self.logits.value is None:
                raise ReferenceError("your decoder has no out module to read the logits from")
            lp = F.log_softmax(self.logits.value.reshape(1, -1), dim=-1)
            attn = self.attn.value
        return lp.reshape(-1), attn


@torch.no_grad()
def run(path, mod, weights, config, source_ids, source_lengths, steps, step_input_ids, max_len, pad):
    """What `reference.py run` writes, from the user's tutorial modules."""
    conv = convention(config["arch"])
    enc, dec = build(path, mod, config, weights)
    B, S = source_ids.shape
    ref.check_lengths(source_lengths, S)
    rows = [source_ids[b, :int(source_lengths[b])].tolist() for b in range(B)]
    H, L, Vt = config["hidden_size"], config["num_layers"], config["tgt_vocab_size"]
    h = config.get("encoder_hidden_size") or H
    C = H if conv == CHATBOT or not config.get("bidirectional") else 2 * h
    # decoder.onnx's states: hidden, cell (LSTM), input_feed (input feeding)
    toolkit = conv in (OPENNMT, JOEY)
    names = ["hidden"] + (["cell"] if toolkit and config.get("cell") == "lstm" else [])
    rows_of = {"hidden": L, "cell": L, "input_feed": 1}
    if toolkit and config.get("input_feed"):
        names.append("input_feed")
    res = {"encoder_outputs": torch.zeros(B, S, C),
           "step_input_ids": torch.zeros(steps, B, dtype=torch.int64), "log_probs": torch.zeros(steps, B, Vt),
           "attention": torch.zeros(steps, B, S), "tokens": torch.zeros(steps, B, dtype=torch.int64),
           "greedy_tokens": torch.full((B, max_len), pad, dtype=torch.int64), "greedy_lengths": torch.zeros(B, dtype=torch.int64)}
    for n in names:
        res[n] = torch.zeros(rows_of[n], B, H)
        res["next_" + n] = torch.zeros(steps, rows_of[n], B, H)

    def states(row, t, b):
        st = row.states()
        if len(st) != len(names):
            raise ReferenceError("your model's state has %d tensors, decoder.onnx's %d (%s)" % (len(st), len(names), ", ".join(names)))
        for n, x in zip(names, st):
            if t is None:
                res[n][:, b] = x.reshape(rows_of[n], H)
            else:
                res["next_" + n][t, :, b] = x.reshape(rows_of[n], H)

    def make(ids):
        if toolkit:
            return ToolkitRow(conv, enc, ids, config)
        return Row(conv, enc, dec, ids, config)

    for b, ids in enumerate(rows):
        try:
            row = make(ids)
            res["encoder_outputs"][b, :row.n] = row.encoder_outputs()
            user_module.decode_row(res, b, row, lambda: make(ids), states, config["sos"], config["eos"],
                                   steps, step_input_ids, max_len, S, config.get("decoding"))
        except ReferenceError:
            raise
        except Exception as e:  # the user's code: say where it failed
            raise ReferenceError("--module %s: your modules raised %s on row %d (%d tokens): %s"
                                 % (path, type(e).__name__, b, len(ids), e))
    return {k: v.contiguous() for k, v in res.items()}
