"""Run a user's own encoder and decoder modules as the oracle of
`attnx verify --torch-module FILE.py` (reference.py run-module).

attnx's reference modules (attnx_reference.py) define what attnx computes;
a user whose code differs from them (another attention, a different
concat, a bug) learns it only by running their own code. This module
imports FILE.py, builds its modules, loads into them the weights attnx's Go
reader extracted from the checkpoint (safetensors, never the user's pickle)
with strict key matching, runs them one sentence at a time with the call
conventions of the article or of PyTorch's tutorial, and writes what
`reference.py run` writes, so that attnx compares the ONNX graphs with them
exactly as with the reference.

What FILE.py must define
------------------------

    def build(config):
        return encoder, decoder      # two torch.nn.Module

config is a dict: arch, cell ("lstm" or "gru"), hidden (H), embedding_size
(E), layers (L), src_vocab, tgt_vocab, max_length (M, tutorial-location
only), sos, eos. The modules' state_dict() keys must be the checkpoint's own
names under encoder. and decoder. (as attnx export reads the file, before
any --map), without those prefixes: embedding.weight, lstm.weight_ih_l0,
... They run in eval mode under torch.no_grad(), at batch 1.

Call conventions, by the model's architecture (ids are int64 tensors):

article (bahdanau, luong-dot, luong-general, luong-concat), the article's
EncoderLSTM and decoders:
    out, state = encoder(ids [1, S], encoder.init_hidden())   (None when
                 the encoder has no init_hidden); out [1, S, H]
    log_probs, state, attn = decoder(token [1], state, out)
                 log_probs [1, Vt], attn with S weights
    state is (h, c) for an LSTM, h for a GRU, each [L, 1, H]

tutorial-location (the tutorial's 2017-2023 version):
    hidden = zeros [1, 1, H] (encoder.initHidden() when defined)
    out, hidden = encoder(token [1], hidden) for each source token, each
                 out[0, 0] copied into a zero [M, H] buffer
    log_probs, hidden, attn = decoder(token [1, 1], hidden, buffer)
                 log_probs [1, Vt], attn [1, M]

tutorial-bahdanau (the tutorial's current version):
    out, hidden = encoder(ids [1, S])
    logits, hidden, attn = decoder.forward_step(token [1, 1], hidden, out)
                 logits [1, 1, Vt] (log_softmax is applied here, as the
                 tutorial's forward does), attn with S weights
"""

import importlib.util
import json
import os
import sys

import torch
import torch.nn.functional as F

import attnx_reference as ref
from attnx_reference import ReferenceError

ARTICLE, LOCATION, BAHDANAU = "article", "tutorial-location", "tutorial-bahdanau"


def convention(arch):
    if arch in ref.ARTICLE_ARCHS:
        return ARTICLE
    if arch in (LOCATION, BAHDANAU):
        return arch
    raise ReferenceError("unknown arch %r in --config" % arch)


def import_file(path):
    """Imports FILE.py (its directory first on sys.path, for its own imports)."""
    if not os.path.isfile(path):
        raise ReferenceError("--module %s: no such file" % path)
    d = os.path.dirname(os.path.abspath(path))
    if d not in sys.path:
        sys.path.insert(0, d)
    spec = importlib.util.spec_from_file_location("attnx_torch_module", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the user's code: report it, whatever it is
        raise ReferenceError("--module %s: importing it raised %s: %s" % (path, type(e).__name__, e))
    if not callable(getattr(mod, "build", None)):
        raise ReferenceError("--module %s defines no build(config) function returning (encoder, decoder)" % path)
    return mod


def _load(module, state, side, path):
    """load_state_dict(strict=True), with a message naming every difference."""
    own = module.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    wrong = ["%s %s (checkpoint %s)" % (k, list(own[k].shape), list(state[k].shape))
             for k in sorted(set(own) & set(state)) if own[k].shape != state[k].shape]
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append("missing from the checkpoint: " + ", ".join(missing))
        if unexpected:
            parts.append("not in your module: " + ", ".join(unexpected))
        if wrong:
            parts.append("other shapes: " + ", ".join(wrong))
        raise ReferenceError("--module %s: your %s's keys differ from the checkpoint's %s.* keys: %s"
                             % (path, side, side, "; ".join(parts)))
    module.load_state_dict(state, strict=True)


def build(path, config, weights):
    """(encoder, decoder) from FILE.py's build(config), weights loaded."""
    mod = import_file(path)
    try:
        built = mod.build(dict(config))
    except Exception as e:
        raise ReferenceError("--module %s: build(config) raised %s: %s" % (path, type(e).__name__, e))
    if not (isinstance(built, (tuple, list)) and len(built) == 2
            and all(isinstance(m, torch.nn.Module) for m in built)):
        raise ReferenceError("--module %s: build(config) must return (encoder, decoder), two torch.nn.Module" % path)
    enc, dec = built
    parts = {"encoder": {}, "decoder": {}}
    for k, v in weights.items():
        side, _, rest = k.partition(".")
        if side not in parts or not rest:
            raise ReferenceError("checkpoint key %s is outside encoder.* and decoder.*: your modules cannot hold it" % k)
        parts[side][rest] = v
    _load(enc, parts["encoder"], "encoder", path)
    _load(dec, parts["decoder"], "decoder", path)
    return enc.eval(), dec.eval()


def _state_tuple(state):
    return tuple(state) if isinstance(state, (tuple, list)) else (state,)


def _attention_row(attn, n, S):
    """The first n weights of attn, zero-padded to S."""
    w = attn.reshape(-1)[:n].to(torch.float32)
    row = torch.zeros(S)
    row[:n] = w
    return row


class _Row:
    """One sentence through the user's modules, with one convention."""

    def __init__(self, conv, enc, dec, ids, config):
        self.conv, self.dec = conv, dec
        n, H = len(ids), config["hidden"]
        self.n = n
        if conv == ARTICLE:
            init = enc.init_hidden() if callable(getattr(enc, "init_hidden", None)) else None
            out, state = enc(torch.tensor([ids], dtype=torch.int64), init)
            self.out, self.state = out, state
            self.outputs = out[0]
        elif conv == LOCATION:
            M = config["max_length"]
            if n > M:
                raise ReferenceError("a source of %d tokens is longer than max_length M = %d" % (n, M))
            hidden = enc.initHidden() if callable(getattr(enc, "initHidden", None)) else torch.zeros(1, 1, H)
            buffer = torch.zeros(M, H)
            for i, tok in enumerate(ids):
                o, hidden = enc(torch.tensor([tok], dtype=torch.int64), hidden)
                buffer[i] += o.reshape(-1)
            self.out, self.state = buffer, hidden
            self.outputs = buffer[:n]
        else:
            out, hidden = enc(torch.tensor([ids], dtype=torch.int64))
            self.out, self.state = out, hidden
            self.outputs = out[0]

    def state_tensors(self):
        return _state_tuple(self.state)

    def step(self, token):
        """One decoder step fed token: (log_probs [Vt], attention weights)."""
        if self.conv == ARTICLE:
            lp, self.state, attn = self.dec(torch.tensor([token], dtype=torch.int64), self.state, self.out)
        elif self.conv == LOCATION:
            lp, self.state, attn = self.dec(torch.tensor([[token]], dtype=torch.int64), self.state, self.out)
        else:
            logits, self.state, attn = self.dec.forward_step(torch.tensor([[token]], dtype=torch.int64), self.state, self.out)
            lp = F.log_softmax(logits.reshape(1, -1), dim=-1)
        return lp.reshape(-1), attn


@torch.no_grad()
def run(path, weights, config, source_ids, source_lengths, steps, step_input_ids=None, max_len=None, pad=ref.PAD_ID):
    """What `reference.py run` writes, computed by the user's modules one
    sentence at a time: the encoder's outputs and state, `steps` decoder
    steps (fed step_input_ids when given, else SOS then each step's own
    argmax) and a greedy decode of max_len (default steps) tokens. For the
    spec's conventions; a toolkit's models go to user_toolkit.run, which
    builds on this module."""
    conv = convention(config["arch"])
    enc, dec = build(path, config, weights)
    B, S = source_ids.shape
    ref.check_lengths(source_lengths, S)
    if max_len is None:
        max_len = steps
    lo, hi = int(source_ids.min()), int(source_ids.max())
    if lo < 0 or hi >= config["src_vocab"]:
        raise ReferenceError("source_ids hold values in [%d, %d], want [0, %d) (source vocabulary)"
                             % (lo, hi, config["src_vocab"]))
    if step_input_ids is not None and steps and (int(step_input_ids.min()) < 0 or int(step_input_ids.max()) >= config["tgt_vocab"]):
        raise ReferenceError("step_input_ids hold values outside the target vocabulary [0, %d)" % config["tgt_vocab"])
    rows = [source_ids[b, :int(source_lengths[b])].tolist() for b in range(B)]
    lstm = config["cell"] == "lstm"
    H, L, Vt = config["hidden"], config["layers"], config["tgt_vocab"]
    res = {"encoder_outputs": torch.zeros(B, S, H), "hidden": torch.zeros(L, B, H)}
    if lstm:
        res["cell"] = torch.zeros(L, B, H)
    res["step_input_ids"] = torch.zeros(steps, B, dtype=torch.int64)
    res["log_probs"] = torch.zeros(steps, B, Vt)
    res["next_hidden"] = torch.zeros(steps, L, B, H)
    if lstm:
        res["next_cell"] = torch.zeros(steps, L, B, H)
    res["attention"] = torch.zeros(steps, B, S)
    res["tokens"] = torch.zeros(steps, B, dtype=torch.int64)
    res["greedy_tokens"] = torch.full((B, max_len), pad, dtype=torch.int64)
    res["greedy_lengths"] = torch.zeros(B, dtype=torch.int64)

    def states(row, t, b):
        st = row.state_tensors()
        if len(st) != (2 if lstm else 1):
            raise ReferenceError("your modules' state has %d tensors, a %s has %d"
                                 % (len(st), config["cell"].upper(), 2 if lstm else 1))
        for name, x in zip(("hidden", "cell"), st):
            x = x.reshape(L, H)
            if t is None:
                res[name][:, b] = x
            else:
                res["next_" + name][t, :, b] = x

    for b, ids in enumerate(rows):
        try:
            _run_row(res, states, conv, enc, dec, ids, config, b, steps, step_input_ids, max_len, S, H)
        except ReferenceError:
            raise
        except Exception as e:  # the user's code: say where it failed
            raise ReferenceError("--module %s: your modules raised %s on row %d (%d tokens): %s"
                                 % (path, type(e).__name__, b, len(ids), e))
    return {k: v.contiguous() for k, v in res.items()}


def _run_row(res, states, conv, enc, dec, ids, config, b, steps, step_input_ids, max_len, S, H):
    """Row b's encoder outputs, steps and greedy decode into res."""
    row = _Row(conv, enc, dec, ids, config)
    res["encoder_outputs"][b, :row.n] = row.outputs.reshape(row.n, H)
    decode_row(res, b, row, lambda: _Row(conv, enc, dec, ids, config), states, config["sos"], config["eos"],
               steps, step_input_ids, max_len, S)


def decode_row(res, b, row, fresh, states, sos, eos, steps, step_input_ids, max_len, S, rules=None):
    """Row b's steps and greedy decode into res, one sentence through a
    user's modules: row (already encoded) runs `steps` steps fed
    step_input_ids (else its own argmax), states(row, t, b) recording the
    states (t None: the initial ones); fresh() encodes the sentence again
    for the greedy decode of max_len tokens, under the toolkit's decoding
    rules when given (attnx.json's decoding). A row has n and step(token)
    -> (log_probs [Vt], attention weights)."""
    states(row, None, b)
    tok = sos
    for t in range(steps):
        if step_input_ids is not None:
            tok = int(step_input_ids[t, b])
        res["step_input_ids"][t, b] = tok
        lp, attn = row.step(tok)
        res["log_probs"][t, b] = lp
        states(row, t, b)
        res["attention"][t, b] = _attention_row(attn, row.n, S)
        tok = int(lp.argmax())
        res["tokens"][t, b] = tok
    row = fresh()
    tok = sos
    for t in range(max_len):
        lp, _ = row.step(tok)
        tok = int(ref.apply_rules(lp.reshape(1, -1), t, rules, eos).argmax())
        res["greedy_tokens"][b, t] = tok
        res["greedy_lengths"][b] += 1
        if tok == eos:
            break


def parse_config(s):
    try:
        config = json.loads(s)
    except ValueError as e:
        raise ReferenceError("--config: not JSON: %s" % e)
    need = ("arch", "cell", "hidden", "embedding_size", "layers", "src_vocab", "tgt_vocab", "sos", "eos")
    if isinstance(config, dict) and str(config.get("arch", "")).startswith(("bentrevett", "chatbot-", "onmt-", "joey-")):
        # the tutorials' models: attnx.json's own field names
        need = ("arch", "hidden_size", "num_layers", "src_vocab_size", "tgt_vocab_size", "sos", "eos")
    if not isinstance(config, dict) or any(k not in config for k in need):
        raise ReferenceError("--config: want a JSON object with %s" % ", ".join(need))
    if config["arch"] == LOCATION and "max_length" not in config:
        raise ReferenceError("--config: a tutorial-location model needs max_length")
    return config
