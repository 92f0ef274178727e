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


def convention(arch):
    if arch == "bentrevett":
        return BENTREVETT
    if arch.startswith("chatbot-"):
        return CHATBOT
    return None


def _load(module, state, what, path):
    own = module.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ReferenceError("--module %s: your %s's keys differ from the checkpoint's: missing from the checkpoint %s, not in your module %s"
                             % (path, what, missing, unexpected))
    module.load_state_dict(state, strict=True)


def build(path, mod, config, weights):
    """The user's modules with the weights loaded, for the convention."""
    conv = convention(config["arch"])
    try:
        built = mod.build(dict(config))
    except Exception as e:
        raise ReferenceError("--module %s: build(config) raised %s: %s" % (path, type(e).__name__, e))
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
    C = H if conv == CHATBOT else 2 * (config.get("encoder_hidden_size") or H)
    res = {"encoder_outputs": torch.zeros(B, S, C), "hidden": torch.zeros(L, B, H),
           "step_input_ids": torch.zeros(steps, B, dtype=torch.int64), "log_probs": torch.zeros(steps, B, Vt),
           "next_hidden": torch.zeros(steps, L, B, H), "attention": torch.zeros(steps, B, S),
           "tokens": torch.zeros(steps, B, dtype=torch.int64),
           "greedy_tokens": torch.full((B, max_len), pad, dtype=torch.int64), "greedy_lengths": torch.zeros(B, dtype=torch.int64)}
    def states(row, t, b):
        if t is None:
            res["hidden"][:, b] = row.states()[0]
        else:
            res["next_hidden"][t, :, b] = row.states()[0]

    for b, ids in enumerate(rows):
        try:
            row = Row(conv, enc, dec, ids, config)
            res["encoder_outputs"][b, :row.n] = row.encoder_outputs()
            user_module.decode_row(res, b, row, lambda: Row(conv, enc, dec, ids, config), states, config["sos"], config["eos"],
                                   steps, step_input_ids, max_len, S)
        except ReferenceError:
            raise
        except Exception as e:  # the user's code: say where it failed
            raise ReferenceError("--module %s: your modules raised %s on row %d (%d tokens): %s"
                                 % (path, type(e).__name__, b, len(ids), e))
    return {k: v.contiguous() for k, v in res.items()}
