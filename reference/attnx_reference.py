"""PyTorch reference for the attnx models (contract: docs/models.md).

The modules of the source article (an RNN encoder, a Bahdanau decoder and a
Luong decoder with Attention dot/general/concat) and of PyTorch's seq2seq
translation tutorial (its 2017-2023 location-based decoder over max_length
and its current Bahdanau decoder with biases), generalised to batches,
ragged source lengths, stacked layers, LSTM or GRU cells and an embedding
size E that may differ from the hidden size H. At batch 1, full length and
one layer they compute exactly what the article's and the tutorial's code
compute (test_reference.py keeps a literal transcription of the article,
test_tutorial.py runs the tutorial's way).

Dropout is left out: everything here is inference (and training of the demo
models does not need it).

Also here: a hand-written safetensors reader/writer (python3-safetensors is
not installed), checkpoint save/load with config inference from the
state_dict keys, greedy decoding and beam search. Nothing here unpickles
arbitrary objects: .pt files load with torch.load(weights_only=True), and
`attnx verify` only ever hands this code safetensors written by attnx's own
Go reader.
"""

import json
import math
import os
import re
import struct
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

ARTICLE_ARCHS = ("bahdanau", "luong-dot", "luong-general", "luong-concat")
TUTORIAL_ARCHS = ("tutorial-location", "tutorial-bahdanau")
ARCHS = ARTICLE_ARCHS + TUTORIAL_ARCHS
CELLS = ("lstm", "gru")

# The article models' special tokens.
PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
# The tutorial's: SOS_token = 0, EOS_token = 1 (it pads with 0 as well).
TUTORIAL_SOS_ID, TUTORIAL_EOS_ID = 0, 1
# The tutorial's MAX_LENGTH, the default max_length M of its 2017 decoder.
TUTORIAL_MAX_LENGTH = 10


class ReferenceError(Exception):
    """A user-facing error (bad checkpoint, bad inputs, bad arguments)."""


# --------------------------------------------------------------------------
# Recurrent cells
#
# A recurrent state is a tuple: (h, c) for an LSTM, (h,) for a GRU, each
# tensor L x B x H. Code that reorders or batches states maps over the tuple.


def make_rnn(cell, input_size, hidden_size, n_layers, batch_first):
    """nn.LSTM or nn.GRU (PyTorch's own: gates i,f,g,o or r,z,n)."""
    if cell == "lstm":
        return nn.LSTM(input_size, hidden_size, n_layers, batch_first=batch_first)
    if cell == "gru":
        return nn.GRU(input_size, hidden_size, n_layers, batch_first=batch_first)
    raise ReferenceError("unknown cell %r, want one of %s" % (cell, ", ".join(CELLS)))


def run_rnn(rnn, x, state):
    """Runs rnn on x (a tensor or a PackedSequence) from state (a state tuple,
    or None for zeros) and returns (output, next state tuple)."""
    if isinstance(rnn, nn.LSTM):
        out, (h, c) = rnn(x, state)
        return out, (h, c)
    out, h = rnn(x, None if state is None else state[0])
    return out, (h,)


def cell_of(rnn):
    return "lstm" if isinstance(rnn, nn.LSTM) else "gru"


# --------------------------------------------------------------------------
# Models


class Encoder(nn.Module):
    """Embedding + RNN over each row's own length (pack_padded_sequence).

    With cell="lstm" and rnn_attr="lstm" it is the article's EncoderLSTM;
    with cell="gru" and rnn_attr="gru" it is the tutorial's EncoderRNN (both
    versions: their keys are the same, embedding.* and gru.*)."""

    def __init__(self, vocab_size, hidden_size, n_layers=1, cell="lstm", embedding_size=None, rnn_attr=None):
        super().__init__()
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.embedding_size = embedding_size or hidden_size
        self.rnn_attr = rnn_attr or cell
        self.embedding = nn.Embedding(vocab_size, self.embedding_size)
        setattr(self, self.rnn_attr, make_rnn(cell, self.embedding_size, hidden_size, n_layers, batch_first=True))

    @property
    def rnn(self):
        return getattr(self, self.rnn_attr)

    def forward(self, source_ids, source_lengths):
        """source_ids [B,S] int64, source_lengths [B] int64 ->
        encoder_outputs [B,S,H] (zero past each length), state tuple of [L,B,H]."""
        _, S = source_ids.shape
        embedded = self.embedding(source_ids)
        lengths = source_lengths.detach().to("cpu", torch.int64)
        check_lengths(lengths, S)
        if bool((lengths == S).all()):
            # Every row is full length: the plain RNN is the same computation
            # (and bit-identical to the article's batch-1 code).
            return run_rnn(self.rnn, embedded, None)
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        packed_out, state = run_rnn(self.rnn, packed, None)
        output, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=S)
        return output, state


def check_lengths(lengths, src_len):
    """Every length must satisfy 1 <= length <= src_len (spec, Encoder)."""
    for row, n in enumerate(lengths.tolist()):
        if n < 1 or n > src_len:
            raise ReferenceError(
                "source_lengths[%d] = %d, want 1 <= length <= src_len = %d" % (row, n, src_len))


def length_mask(source_lengths, src_len):
    """[B,S] bool, True where s >= source_length (positions to mask)."""
    positions = torch.arange(src_len, device=source_lengths.device).unsqueeze(0)
    return positions >= source_lengths.unsqueeze(1)


def _uniform_row(hidden_size):
    """A 1 x H row initialised like nn.Linear's weight (the article leaves its
    attention vectors uninitialised)."""
    bound = 1.0 / hidden_size ** 0.5
    return torch.empty(1, hidden_size).uniform_(-bound, bound)


def _sizes(module, hidden_size, output_size, n_layers, embedding_size, rnn_attr):
    """The size attributes every decoder keeps (no parameters: registering
    nothing keeps the state_dict order of the modules)."""
    module.hidden_size = hidden_size
    module.output_size = output_size
    module.n_layers = n_layers
    module.embedding_size = embedding_size or hidden_size
    module.rnn_attr = rnn_attr


def _attend(scores, encoder_outputs, source_lengths):
    """Masked softmax over S and the context: (attention [B,S], context [B,H])."""
    scores = scores.masked_fill(length_mask(source_lengths, encoder_outputs.shape[1]), float("-inf"))
    attn = F.softmax(scores, dim=1)
    context = torch.bmm(attn.unsqueeze(1), encoder_outputs).squeeze(1)
    return attn, context


class BahdanauDecoder(nn.Module):
    """The article's additive attention computed from the previous top-layer
    hidden state; [embedding; context] is the RNN input (E + H)."""

    def __init__(self, hidden_size, output_size, n_layers=1, cell="lstm", embedding_size=None, rnn_attr=None):
        super().__init__()
        _sizes(self, hidden_size, output_size, n_layers, embedding_size, rnn_attr or cell)
        self.embedding = nn.Embedding(output_size, self.embedding_size)
        self.fc_hidden = nn.Linear(hidden_size, hidden_size, bias=False)
        self.fc_encoder = nn.Linear(hidden_size, hidden_size, bias=False)
        self.weight = nn.Parameter(_uniform_row(hidden_size))  # article: uninitialised FloatTensor
        self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)  # article: defined, never used
        setattr(self, self.rnn_attr, make_rnn(cell, self.embedding_size + hidden_size, hidden_size, n_layers,
                                              batch_first=True))
        self.classifier = nn.Linear(hidden_size, output_size)

    @property
    def rnn(self):
        return getattr(self, self.rnn_attr)

    def forward(self, input_ids, state, encoder_outputs, source_lengths):
        """input_ids [B], state tuple of [L,B,H], encoder_outputs [B,S,H],
        source_lengths [B] -> log_probs [B,Vt], next state tuple, attention [B,S]."""
        B, S, H = encoder_outputs.shape
        embedded = self.embedding(input_ids)                                   # B x E
        q = state[0][self.n_layers - 1]                                        # B x H
        x = torch.tanh(self.fc_hidden(q).unsqueeze(1) + self.fc_encoder(encoder_outputs))  # B x S x H
        scores = x.bmm(self.weight.unsqueeze(2).expand(B, H, 1)).squeeze(2)    # B x S
        attn, context = _attend(scores, encoder_outputs, source_lengths)
        rnn_in = torch.cat((embedded, context), 1).unsqueeze(1)                # B x 1 x (E+H)
        out, next_state = run_rnn(self.rnn, rnn_in, state)
        log_probs = F.log_softmax(self.classifier(out[:, 0]), dim=1)
        return log_probs, next_state, attn


class Attention(nn.Module):
    """Luong scoring: dot, general, concat (the article's variant of concat:
    tanh(W_a (q + enc_s)) . w)."""

    def __init__(self, hidden_size, method="dot"):
        super().__init__()
        if method not in ("dot", "general", "concat"):
            raise ReferenceError("unknown Luong scoring method %r, want dot, general or concat" % method)
        self.method = method
        self.hidden_size = hidden_size
        if method in ("general", "concat"):
            self.fc = nn.Linear(hidden_size, hidden_size, bias=False)
        if method == "concat":
            self.weight = nn.Parameter(_uniform_row(hidden_size))

    def forward(self, decoder_hidden, encoder_outputs):
        """decoder_hidden [B,H], encoder_outputs [B,S,H] -> scores [B,S] (unmasked)."""
        B, _, H = encoder_outputs.shape
        if self.method == "dot":
            return encoder_outputs.bmm(decoder_hidden.unsqueeze(2)).squeeze(-1)
        if self.method == "general":
            out = self.fc(decoder_hidden)
            return encoder_outputs.bmm(out.unsqueeze(2)).squeeze(-1)
        out = torch.tanh(self.fc(decoder_hidden.unsqueeze(1) + encoder_outputs))
        return out.bmm(self.weight.unsqueeze(-1).expand(B, H, 1)).squeeze(-1)


class LuongDecoder(nn.Module):
    """RNN step first (input E), then attention from its output, classifier on [q; ctx]."""

    def __init__(self, hidden_size, output_size, method="dot", n_layers=1, cell="lstm", embedding_size=None,
                 rnn_attr=None):
        super().__init__()
        _sizes(self, hidden_size, output_size, n_layers, embedding_size, rnn_attr or cell)
        self.attention = Attention(hidden_size, method)
        self.embedding = nn.Embedding(output_size, self.embedding_size)
        setattr(self, self.rnn_attr, make_rnn(cell, self.embedding_size, hidden_size, n_layers, batch_first=False))
        self.classifier = nn.Linear(hidden_size * 2, output_size)

    @property
    def rnn(self):
        return getattr(self, self.rnn_attr)

    def forward(self, input_ids, state, encoder_outputs, source_lengths):
        """Same interface as BahdanauDecoder.forward."""
        embedded = self.embedding(input_ids).unsqueeze(0)                      # 1 x B x E
        rnn_out, next_state = run_rnn(self.rnn, embedded, state)
        q = rnn_out[0]                                                         # B x H
        scores = self.attention(q, encoder_outputs)
        attn, context = _attend(scores, encoder_outputs, source_lengths)
        output = torch.cat((q, context), -1)
        log_probs = F.log_softmax(self.classifier(output), dim=1)
        return log_probs, next_state, attn


class TutorialLocationDecoder(nn.Module):
    """The tutorial's 2017-2023 AttnDecoderRNN: attention weights over
    max_length M positions from [embedding; hidden], attn_combine + relu, GRU.

    The tutorial's encoder_outputs buffer is M rows, zero past the sentence;
    here the context sums over the S source positions (zero past each row's
    length), which is the same sum. The attention weights do not sum to 1
    over the source; the attention output is w[:, :S], zero past each length."""

    def __init__(self, hidden_size, output_size, max_length=TUTORIAL_MAX_LENGTH, n_layers=1, embedding_size=None):
        super().__init__()
        _sizes(self, hidden_size, output_size, n_layers, embedding_size, "gru")
        self.max_length = max_length
        self.embedding = nn.Embedding(output_size, self.embedding_size)
        self.attn = nn.Linear(self.embedding_size + hidden_size, max_length)
        self.attn_combine = nn.Linear(self.embedding_size + hidden_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers)
        self.out = nn.Linear(hidden_size, output_size)

    @property
    def rnn(self):
        return self.gru

    def forward(self, input_ids, state, encoder_outputs, source_lengths):
        """Same interface as BahdanauDecoder.forward."""
        S = encoder_outputs.shape[1]
        if S > self.max_length:
            raise ReferenceError("source length %d exceeds the decoder's max_length M = %d (rows of decoder.attn.weight)"
                                 % (S, self.max_length))
        embedded = self.embedding(input_ids)                                   # B x E
        q = state[0][self.n_layers - 1]                                        # B x H
        weights = F.softmax(self.attn(torch.cat((embedded, q), 1)), dim=1)     # B x M
        w = weights[:, :S]
        context = torch.bmm(w.unsqueeze(1), encoder_outputs).squeeze(1)        # B x H
        x = F.relu(self.attn_combine(torch.cat((embedded, context), 1)))
        out, next_state = run_rnn(self.gru, x.unsqueeze(0), state)
        log_probs = F.log_softmax(self.out(out[0]), dim=1)
        attn = w.masked_fill(length_mask(source_lengths, S), 0.0)
        return log_probs, next_state, attn


class TutorialAttention(nn.Module):
    """The tutorial's BahdanauAttention: Va . tanh(Wa q + Ua k), all with biases."""

    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        """query [B,H], keys [B,S,H] -> scores [B,S] (unmasked)."""
        return self.Va(torch.tanh(self.Wa(query).unsqueeze(1) + self.Ua(keys))).squeeze(2)


class TutorialBahdanauDecoder(nn.Module):
    """The tutorial's current AttnDecoderRNN (its forward_step): Bahdanau
    attention with biases from the previous top-layer hidden state, then
    GRU([embedding; context]) (E + H -> H), then out."""

    def __init__(self, hidden_size, output_size, n_layers=1, embedding_size=None):
        super().__init__()
        _sizes(self, hidden_size, output_size, n_layers, embedding_size, "gru")
        self.embedding = nn.Embedding(output_size, self.embedding_size)
        self.attention = TutorialAttention(hidden_size)
        self.gru = nn.GRU(self.embedding_size + hidden_size, hidden_size, n_layers, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    @property
    def rnn(self):
        return self.gru

    def forward(self, input_ids, state, encoder_outputs, source_lengths):
        """Same interface as BahdanauDecoder.forward."""
        embedded = self.embedding(input_ids)                                   # B x E
        q = state[0][self.n_layers - 1]                                        # B x H
        scores = self.attention(q, encoder_outputs)                            # B x S
        attn, context = _attend(scores, encoder_outputs, source_lengths)
        out, next_state = run_rnn(self.gru, torch.cat((embedded, context), 1).unsqueeze(1), state)
        log_probs = F.log_softmax(self.out(out[:, 0]), dim=1)
        return log_probs, next_state, attn


class Seq2Seq(nn.Module):
    """Wrapper whose state_dict keys are the spec's (encoder.*, decoder.*)."""

    def __init__(self, encoder, decoder, arch):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.arch = arch

    @property
    def cell(self):
        return cell_of(self.encoder.rnn)

    @property
    def config(self):
        """arch, cell, hidden (H), embedding_size (E), layers (L), src_vocab,
        tgt_vocab, and max_length (M) for tutorial-location."""
        c = {
            "arch": self.arch,
            "cell": self.cell,
            "hidden": self.encoder.hidden_size,
            "embedding_size": self.encoder.embedding_size,
            "layers": self.encoder.n_layers,
            "src_vocab": self.encoder.embedding.num_embeddings,
            "tgt_vocab": self.decoder.output_size,
        }
        if self.arch == "tutorial-location":
            c["max_length"] = self.decoder.max_length
        return c

    def special_tokens(self):
        """(sos, eos, pad): the tutorial's for tutorial models, else the article's."""
        if self.arch in TUTORIAL_ARCHS:
            return TUTORIAL_SOS_ID, TUTORIAL_EOS_ID, PAD_ID
        return SOS_ID, EOS_ID, PAD_ID


def build_model(arch, H, L, Vs, Vt, cell=None, embedding_size=None, max_length=None,
                encoder_rnn=None, decoder_rnn=None):
    """A freshly initialised (PyTorch defaults) model of the given config.

    cell defaults to lstm for the article's decoders and gru for the
    tutorial's (which are GRU only); embedding_size (E) defaults to H;
    max_length (M) is required for tutorial-location. encoder_rnn and
    decoder_rnn name the RNN attribute (default: the cell's name; an
    article model may hold a GRU under `lstm`)."""
    if arch not in ARCHS:
        raise ReferenceError("unknown arch %r, want one of %s" % (arch, ", ".join(ARCHS)))
    if cell is None:
        cell = "gru" if arch in TUTORIAL_ARCHS else "lstm"
    if cell not in CELLS:
        raise ReferenceError("unknown cell %r, want one of %s" % (cell, ", ".join(CELLS)))
    if arch in TUTORIAL_ARCHS and cell != "gru":
        raise ReferenceError("%s decoders are GRU only (the tutorial's), got cell %s" % (arch, cell))
    E = H if embedding_size is None else embedding_size
    sizes = [("hidden", H), ("layers", L), ("src-vocab", Vs), ("tgt-vocab", Vt), ("embedding-size", E)]
    if arch == "tutorial-location":
        if max_length is None:
            raise ReferenceError("tutorial-location needs max_length (M, the rows of decoder.attn.weight)")
        sizes.append(("max-length", max_length))
    for name, v in sizes:
        if int(v) < 1:
            raise ReferenceError("%s = %d, want >= 1" % (name, v))
    for name, attr in (("encoder", encoder_rnn), ("decoder", decoder_rnn)):
        if attr is not None and attr not in CELLS:
            raise ReferenceError("%s RNN attribute %r, want lstm or gru" % (name, attr))
    encoder = Encoder(Vs, H, L, cell, E, encoder_rnn)
    if arch == "bahdanau":
        decoder = BahdanauDecoder(H, Vt, L, cell, E, decoder_rnn)
    elif arch == "tutorial-location":
        decoder = TutorialLocationDecoder(H, Vt, max_length, L, E)
    elif arch == "tutorial-bahdanau":
        decoder = TutorialBahdanauDecoder(H, Vt, L, E)
    else:
        decoder = LuongDecoder(H, Vt, arch.split("-", 1)[1], L, cell, E, decoder_rnn)
    return Seq2Seq(encoder, decoder, arch)


def randomize(model, seed, std=0.5):
    """Seeded N(0, std) init of every parameter (incl. decoder.weight, which the
    article leaves uninitialised), in state_dict key order: deterministic."""
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std)
    return model


def make_model(arch, H, L, Vs, Vt, seed, std=0.5, **config):
    """build_model (config: cell, embedding_size, max_length, ...) +
    randomize, in eval mode."""
    return randomize(build_model(arch, H, L, Vs, Vt, **config), seed, std).eval()


# --------------------------------------------------------------------------
# Config inference and checkpoint I/O


def _shape(t):
    return "x".join(str(d) for d in t.shape) or "scalar"


def _key_list(state, limit=20):
    keys = sorted(state)
    shown = ", ".join("%s [%s]" % (k, _shape(state[k])) for k in keys[:limit])
    if len(keys) > limit:
        shown += ", ... (%d keys in all)" % len(keys)
    return shown


def _infer_rnn(state, side):
    """(attribute, cell, H, L) of the encoder's or decoder's RNN: the cell
    from the attribute name (gru.) or, for an attribute named lstm, from the
    rows of weight_hh_l0 (4H: LSTM, 3H: GRU)."""
    attrs = [a for a in CELLS if "%s.%s.weight_hh_l0" % (side, a) in state]
    if not attrs:
        raise ReferenceError("checkpoint lacks %s.lstm.weight_hh_l0 or %s.gru.weight_hh_l0 (not an attnx seq2seq "
                             "state_dict?); its keys: %s" % (side, side, _key_list(state)))
    if len(attrs) > 1:
        raise ReferenceError("checkpoint has both %s.lstm.* and %s.gru.*: want one RNN per module" % (side, side))
    attr = attrs[0]
    key = "%s.%s.weight_hh_l0" % (side, attr)
    w = state[key]
    if w.dim() != 2 or w.shape[1] < 1:
        raise ReferenceError("%s has shape %s, want [3H or 4H, H]" % (key, list(w.shape)))
    H, rows = int(w.shape[1]), int(w.shape[0])
    if rows == 4 * H:
        cell = "lstm"
    elif rows == 3 * H:
        cell = "gru"
    else:
        raise ReferenceError("%s has shape %s: %d rows is neither 4H (LSTM) nor 3H (GRU) for H = %d"
                             % (key, list(w.shape), rows, H))
    if attr == "gru" and cell != "gru":
        raise ReferenceError("%s has %d = 4H rows: an attribute named gru must hold a GRU (3H rows)" % (key, rows))
    pattern = re.compile(r"^%s\.%s\.weight_ih_l(\d+)$" % (side, attr))
    layers = [int(m.group(1)) for m in (pattern.match(k) for k in state) if m]
    if not layers:
        raise ReferenceError("checkpoint lacks %s.%s.weight_ih_l0" % (side, attr))
    return attr, cell, H, max(layers) + 1


def _embedding(state, side):
    key = "%s.embedding.weight" % side
    if key not in state:
        raise ReferenceError("checkpoint lacks %s (not an attnx seq2seq state_dict?); its keys: %s"
                             % (key, _key_list(state)))
    t = state[key]
    if t.dim() != 2:
        raise ReferenceError("%s must be 2-D [vocab, embedding size], got %s" % (key, list(t.shape)))
    return int(t.shape[0]), int(t.shape[1])


def infer_config(state):
    """The build_model config the state_dict keys and shapes describe (spec,
    Checkpoint layout and Beyond the article): a dict with arch, H, L, Vs,
    Vt, cell, embedding_size, max_length, encoder_rnn and decoder_rnn."""
    Vs, E = _embedding(state, "encoder")
    Vt, Ed = _embedding(state, "decoder")
    if Ed != E:
        raise ReferenceError("decoder.embedding.weight is %dx%d, want embedding size %d as in encoder.embedding.weight"
                             % (Vt, Ed, E))
    enc_attr, enc_cell, H, L = _infer_rnn(state, "encoder")
    dec_attr, dec_cell, Hd, Ld = _infer_rnn(state, "decoder")
    if enc_cell != dec_cell:
        raise ReferenceError("encoder is %s, decoder %s: they must use the same cell" % (enc_cell.upper(), dec_cell.upper()))
    if Hd != H:
        raise ReferenceError("decoder hidden size %d differs from the encoder's %d" % (Hd, H))
    if L != Ld:
        raise ReferenceError("encoder has %d %s layers, decoder %d: they must be equal"
                             % (L, enc_cell.upper(), Ld))
    max_length = None
    if "decoder.attn.weight" in state:
        arch = "tutorial-location"
        w = state["decoder.attn.weight"]
        if w.dim() != 2:
            raise ReferenceError("decoder.attn.weight must be 2-D [max_length, E+H], got %s" % list(w.shape))
        max_length = int(w.shape[0])
    elif "decoder.attention.Wa.weight" in state:
        arch = "tutorial-bahdanau"
    elif "decoder.fc_hidden.weight" in state:
        arch = "bahdanau"
    elif "decoder.classifier.weight" in state:
        if "decoder.attention.fc.weight" in state:
            arch = "luong-concat" if "decoder.attention.weight" in state else "luong-general"
        else:
            arch = "luong-dot"
    else:
        raise ReferenceError("cannot tell the decoder architecture: no decoder.attn.weight (tutorial-location), "
                             "decoder.attention.Wa.weight (tutorial-bahdanau), decoder.fc_hidden.weight (bahdanau) "
                             "or decoder.classifier.weight (luong); its keys: %s" % _key_list(state))
    if arch in TUTORIAL_ARCHS and enc_cell != "gru":
        raise ReferenceError("%s keys with an LSTM: the tutorial's decoders are GRU only" % arch)
    return {"arch": arch, "H": H, "L": L, "Vs": Vs, "Vt": Vt, "cell": enc_cell, "embedding_size": E,
            "max_length": max_length, "encoder_rnn": enc_attr, "decoder_rnn": dec_attr}


def model_from_state_dict(state):
    """Build the model the keys describe and load the weights (strict, except
    that the article Bahdanau decoder's unused attn_combine may be absent or
    of any shape)."""
    cfg = infer_config(state)
    arch = cfg["arch"]
    model = build_model(**cfg)
    expected = model.state_dict()
    desc = "%s %s model (H=%d, E=%d, L=%d, Vs=%d, Vt=%d%s)" % (
        arch, cfg["cell"].upper(), cfg["H"], cfg["embedding_size"], cfg["L"], cfg["Vs"], cfg["Vt"],
        ", M=%d" % cfg["max_length"] if cfg["max_length"] else "")
    ignored = "decoder.attn_combine." if arch == "bahdanau" else None
    # The unused attn_combine loads when its shape fits and is dropped otherwise.
    state = {k: v for k, v in state.items() if not (ignored and k.startswith(ignored) and (
        k not in expected or tuple(v.shape) != tuple(expected[k].shape)))}
    missing = [k for k in expected if k not in state and not (ignored and k.startswith(ignored))]
    unexpected = [k for k in state if k not in expected]
    if missing or unexpected:
        raise ReferenceError("checkpoint keys do not match a %s: missing %s, unexpected %s" % (desc, missing, unexpected))
    for k, v in state.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ReferenceError("%s has shape %s, want %s for a %s"
                                 % (k, list(v.shape), list(expected[k].shape), desc))
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()}, strict=False)
    return model.eval()


def load_state(path):
    """A flat state_dict from a .safetensors file (read by hand) or a
    torch.save zip archive of tensors (torch.load with weights_only=True: no
    pickled callable runs). Containers (training checkpoints, whole modules,
    prefixes) are the Go reader's business: `attnx verify` hands this code the
    tensors it extracted, as safetensors."""
    if not os.path.exists(path):
        raise ReferenceError("checkpoint %s does not exist" % path)
    if path.endswith(".safetensors"):
        state, _ = read_safetensors(path)
        return state
    if not zipfile.is_zipfile(path):
        # Might still be safetensors under another name.
        try:
            state, _ = read_safetensors(path)
            return state
        except ReferenceError:
            raise ReferenceError("%s is neither a torch.save zip archive nor a safetensors file" % path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - report any unpickling problem as a user error
        msg = str(e).strip() or type(e).__name__
        if "WeightsUnpickler error:" in msg:
            # torch's advice to retry without weights_only is not ours to give.
            msg = msg.split("WeightsUnpickler error:", 1)[1].strip()
        raise ReferenceError("cannot load %s with torch.load(weights_only=True), which reads only tensors and "
                             "plain containers: %s" % (path, msg.splitlines()[0]))
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ReferenceError("%s does not hold a flat state_dict of tensors" % path)
    return state


# The safetensors metadata entry in which `attnx verify` hands over a
# toolkit model's configuration (attnx.json's fields as JSON): OpenNMT-py
# and JoeyNMT keep it outside the tensors.
CONFIG_METADATA = "attnx.config"


def save_model(model, path, fmt=None):
    """torch.save(model.state_dict()) (zip) or safetensors with the same keys."""
    if fmt is None:
        fmt = "safetensors" if path.endswith(".safetensors") else "pt"
    state = model.state_dict()
    if fmt == "safetensors":
        write_safetensors(path, state)
    elif fmt == "pt":
        torch.save(state, path)
    else:
        raise ReferenceError("unknown checkpoint format %r, want pt or safetensors" % fmt)


# --------------------------------------------------------------------------
# safetensors, by hand

_ST_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}


def write_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} as safetensors: 8-byte LE header length, JSON header
    (keys sorted, padded with spaces to 8 bytes), then raw little-endian bytes."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if not isinstance(t, torch.Tensor):
            raise ReferenceError("safetensors: %s is not a tensor" % name)
        if t.dtype not in _ST_NAMES:
            raise ReferenceError("safetensors: %s has unsupported dtype %s" % (name, t.dtype))
        t = t.detach().to("cpu").contiguous()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _ST_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hjson = json.dumps(header, separators=(",", ":"), sort_keys=True).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    """({name: tensor}, metadata dict) from a safetensors file."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ReferenceError("cannot read %s: %s" % (path, e))
    if len(raw) < 8:
        raise ReferenceError("%s is not safetensors: %d bytes, want at least 8" % (path, len(raw)))
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ReferenceError("%s is not safetensors: header length %d exceeds file size %d" % (path, n, len(raw)))
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ReferenceError("%s is not safetensors: bad JSON header: %s" % (path, e))
    if not isinstance(header, dict):
        raise ReferenceError("%s is not safetensors: header is not a JSON object" % path)
    metadata = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, info in header.items():
        try:
            dtype = _ST_DTYPES[info["dtype"]]
            shape = [int(d) for d in info["shape"]]
            start, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ReferenceError("%s: tensor %s has a malformed header entry %r" % (path, name, info))
        numel = 1
        for d in shape:
            numel *= d
        itemsize = torch.tensor([], dtype=dtype).element_size()
        if end - start != numel * itemsize or start < 0 or end > len(data):
            raise ReferenceError("%s: tensor %s data_offsets %s do not fit shape %s of %s (data is %d bytes)"
                                 % (path, name, [start, end], shape, info["dtype"], len(data)))
        buf = bytearray(data[start:end])
        if numel == 0:
            t = torch.zeros(shape, dtype=dtype)
        else:
            t = torch.frombuffer(buf, dtype=dtype).reshape(shape).clone()
        out[name] = t
    return out, metadata


# --------------------------------------------------------------------------
# Running


@torch.no_grad()
def run_steps(model, source_ids, source_lengths, steps, sos=SOS_ID, step_input_ids=None):
    """Encoder once, then `steps` decoder steps, teacher-forced by step_input_ids
    [T,B] when given, else SOS then argmax of the previous step (no EOS stop).
    Returns a dict of the `run` outputs (without the greedy ones); cell and
    next_cell only for LSTM models."""
    enc, state = model.encoder(source_ids, source_lengths)
    B = source_ids.shape[0]
    if step_input_ids is not None and tuple(step_input_ids.shape) != (steps, B):
        raise ReferenceError("step_input_ids has shape %s, want [steps=%d, batch=%d]"
                             % (tuple(step_input_ids.shape), steps, B))
    names = state_names(model, state)
    res = {"encoder_outputs": enc}
    for name, st in zip(names, state):
        res[name] = st
    inputs, lps, nexts, atts, toks, copies = [], [], [[] for _ in names], [], [], []
    inp = torch.full((B,), sos, dtype=torch.int64)
    for t in range(steps):
        if step_input_ids is not None:
            inp = step_input_ids[t].to(torch.int64)
        out = model.decoder(inp, state, enc, source_lengths)
        lp, state, attn = out[:3]
        if len(out) > 3:  # a copy-attention model's copy_probs
            copies.append(out[3])
        tok = lp.argmax(dim=1)
        inputs.append(inp)
        lps.append(lp)
        for i, st in enumerate(state):
            nexts[i].append(st)
        atts.append(attn)
        toks.append(tok)
        inp = tok
    S = enc.shape[1]
    Vt = model.decoder.output_size
    res["step_input_ids"] = torch.stack(inputs) if steps else torch.zeros(0, B, dtype=torch.int64)
    res["log_probs"] = torch.stack(lps) if steps else torch.zeros(0, B, Vt)
    for i, name in enumerate(names):
        res["next_" + name] = torch.stack(nexts[i]) if steps else torch.zeros((0,) + tuple(state[i].shape))
    res["attention"] = torch.stack(atts) if steps else torch.zeros(0, B, S)
    if copies:
        res["copy_probs"] = torch.stack(copies)
    res["tokens"] = torch.stack(toks) if steps else torch.zeros(0, B, dtype=torch.int64)
    return res


def state_names(model, state):
    """The names of a state tuple's entries as decoder.onnx has them: the
    model's own (the toolkits' add input_feed), else hidden and, for an
    LSTM, cell."""
    names = getattr(model, "state_names", None)
    if names is None:
        names = ("hidden", "cell")[:len(state)]
    if len(names) != len(state):
        raise ReferenceError("the model's state has %d tensors, but %d names %s" % (len(state), len(names), names))
    return tuple(names)


@torch.no_grad()
def greedy_decode(model, source_ids, source_lengths, sos=SOS_ID, eos=EOS_ID, max_len=50, pad=PAD_ID, rules=None):
    """Greedy decoding (spec): a row stops at EOS (included); stop when every row
    stopped or after max_len steps. Returns (tokens [B,max_len] padded with pad,
    lengths [B])."""
    model.eval()
    enc, state = model.encoder(source_ids, source_lengths)
    B = source_ids.shape[0]
    tokens = torch.full((B, max_len), pad, dtype=torch.int64)
    lengths = torch.zeros(B, dtype=torch.int64)
    done = torch.zeros(B, dtype=torch.bool)
    inp = torch.full((B,), sos, dtype=torch.int64)
    for t in range(max_len):
        lp, state, _ = model.decoder(inp, state, enc, source_lengths)[:3]
        tok = apply_rules(lp, t, rules, eos).argmax(dim=1)
        live = ~done
        tokens[live, t] = tok[live]
        lengths[live] += 1
        done = done | (tok == eos)
        if bool(done.all()):
            break
        inp = tok
    return tokens, lengths


# --------------------------------------------------------------------------
# Beam search (spec: Beam search)


class Hypothesis:
    """One beam hypothesis: its tokens, its score (a float32 value: the
    float32 sum of its tokens' float32 log_probs, in step order) and, once
    finished or returned, its normalised score."""

    __slots__ = ("tokens", "score", "normalized", "slot")

    def __init__(self, tokens, score, slot=-1):
        self.tokens = tokens
        self.score = score
        self.normalized = None
        self.slot = slot

    def __repr__(self):
        return "Hypothesis(%r, score=%r, normalized=%r)" % (self.tokens, self.score, self.normalized)


def normalized_score(score, length, alpha):
    """score / length ** alpha, computed in float64 from the float32 score and
    rounded to float32: the value the final order compares."""
    return float(torch.tensor(float(score) / float(length) ** float(alpha), dtype=torch.float32))


def ranked_candidates(scores, log_probs, limit):
    """The first `limit` (at least; more when scores tie at the cut) of the
    candidates (score_i + log_probs[i, v], i, v) in the spec's order: score
    descending, then i ascending, then v ascending. scores: float32 [n];
    log_probs: float32 [n, V]. Sums are float32, as the spec requires."""
    cand = (scores.to(torch.float32).unsqueeze(1) + log_probs.to(torch.float32)).reshape(-1)
    V = log_probs.shape[1]
    if cand.numel() > limit:
        cut = torch.topk(cand, limit).values[-1]
        index = torch.nonzero(cand >= cut).reshape(-1)
    else:
        index = torch.arange(cand.numel())
    values = cand[index].tolist()
    order = sorted(zip(values, index.tolist()), key=lambda p: (-p[0], p[1]))
    return [(s, flat // V, flat % V) for s, flat in order]


@torch.no_grad()
def run_slots(step, state, batch, beam, max_len, sos, advance):
    """Runs a beam search's decoder on a fixed batch of B*K slots (row b's
    hypotheses in slots b*K .. b*K+K-1; slots of ended rows or of missing
    hypotheses keep computing stale inputs), so that K = 1 runs exactly
    greedy decoding's batch. step(input_ids [B*K] int64, state) ->
    (log_probs [B*K, V], next_state); state is a tuple of tensors whose
    dimension 1 is the slot. Each step, advance(b, t, hyps, log_probs)
    is called for every row not done, with its hypotheses (each .slot its
    slot) and their log-probs; it returns the row's next hypotheses (.slot
    their parent's slot) and whether the row is done. Starts each row from
    one empty hypothesis; returns the last hypotheses of every row."""
    K, B = int(beam), batch
    live = [[Hypothesis([], 0.0, b * K)] for b in range(B)]
    done = [False] * B
    inp = torch.full((B * K,), sos, dtype=torch.int64)
    for t in range(max_len):
        if all(done):
            break
        log_probs, next_state = step(inp, state)
        gather = list(range(B * K))
        next_inp = inp.clone()
        for b in range(B):
            if done[b]:
                continue
            slots = torch.tensor([h.slot for h in live[b]], dtype=torch.int64)
            new, done[b] = advance(b, t, live[b], log_probs.index_select(0, slots))
            for j, h in enumerate(new):
                gather[b * K + j] = h.slot
                next_inp[b * K + j] = h.tokens[-1]
                h.slot = b * K + j
            live[b] = new
        index = torch.tensor(gather, dtype=torch.int64)
        state = tuple(x.index_select(1, index) for x in next_state)
        inp = next_inp
    return live


@torch.no_grad()
def beam_search_steps(step, state, batch, beam, max_len, sos, eos, alpha=1.0):
    """Beam search (spec) for `batch` rows of `beam` hypotheses each.

    The decoder runs on a fixed batch of B*K slots (row b's hypotheses in
    slots b*K .. b*K+K-1; slots of ended rows or of missing hypotheses keep
    computing stale inputs), so that K = 1 runs exactly greedy decoding's
    batch. step(input_ids [B*K] int64, state) -> (log_probs [B*K, V],
    next_state); state is a tuple of tensors whose dimension 1 is the slot.
    Returns, per row, every hypothesis of the result in the spec's final
    order (normalised score descending, ties in insertion order)."""
    K = int(beam)
    if K < 1:
        raise ReferenceError("beam %d, want >= 1" % K)
    if max_len < 1:
        raise ReferenceError("max_len %d, want >= 1 for beam search" % max_len)
    if not (alpha >= 0 and math.isfinite(alpha)):
        raise ReferenceError("length penalty %r, want a finite value >= 0" % alpha)
    B = batch
    finished = [[] for _ in range(B)]

    def advance(b, t, hyps, log_probs):
        scores = torch.tensor([h.score for h in hyps], dtype=torch.float32)
        new_live = []
        # Walking stops after K live entries; each hypothesis adds at most
        # one EOS candidate, so K + len(hyps) candidates always suffice.
        for rank, (s, i, v) in enumerate(ranked_candidates(scores, log_probs, K + len(hyps))):
            if v == eos:
                if rank < K:
                    finished[b].append(Hypothesis(hyps[i].tokens + [eos], s))
                continue
            new_live.append(Hypothesis(hyps[i].tokens + [v], s, hyps[i].slot))
            if len(new_live) == K:
                break
        return new_live, len(finished[b]) >= K or not new_live

    live = run_slots(step, state, B, K, max_len, sos, advance)
    results = []
    for b in range(B):
        hyps = finished[b]
        if len(hyps) < K:
            hyps = hyps + live[b]
        for h in hyps:
            h.normalized = normalized_score(h.score, len(h.tokens), alpha)
            h.slot = -1
        results.append(sorted(hyps, key=lambda h: -h.normalized))  # sorted() is stable: ties keep insertion order
    return results


def _toolkit_picks(hyps, log_probs, penalty, k):
    """The k best candidates of hyps (their running float32 scores) over
    log_probs [len(hyps), V]: (penalised score, hypothesis, token), ranked by
    that score descending, then hypothesis, then token, as torch.topk over
    the flattened candidates gives them. The sums are float32, then divided
    by penalty (a Python float) when it is not 1, as both toolkits do."""
    scores = torch.tensor([h.score for h in hyps], dtype=torch.float32)
    cand = log_probs.to(torch.float32) + scores.unsqueeze(1)
    if penalty != 1:
        cand = cand / penalty
    V = cand.shape[1]
    flat = cand.reshape(-1).tolist()
    order = sorted(range(len(flat)), key=lambda i: (-flat[i], i))[:k]
    return [(flat[i], i // V, i % V) for i in order]


def _times(x, penalty):
    """float32(x * penalty): the running score the toolkits keep."""
    return float(torch.tensor([x], dtype=torch.float32) * penalty) if penalty != 1 else x


@torch.no_grad()
def beam_search_opennmt_steps(step, state, batch, beam, n_best, max_len, sos, eos, penalty="avg", alpha=1.0):
    """OpenNMT-py 3.x's BeamSearch (onmt_translate), on the same slots as
    beam_search_steps: the K best candidates of the live hypotheses, ranked
    by score / penalty (avg: (len + 1) ** alpha, wu: ((5 + len + 1) / 6) **
    alpha, len counting the start token); an end token among them finishes
    its hypothesis with that penalised score, and the others go on; a row
    stops at a step whose best candidate ends once n_best have ended, or at
    max_len where every pick ends. Returns each row's n_best finished
    hypotheses by penalised score (stable), normalized = that score."""
    K, B = int(beam), batch
    finished = [[] for _ in range(B)]

    def advance(b, t, hyps, log_probs):
        cur = t + 2  # the start token, t tokens, and the one picked now
        pen = {"avg": float(cur) ** alpha, "wu": ((5.0 + cur) / 6.0) ** alpha}.get(penalty, 1.0)
        new_live, top_ended = [], False
        for r, (c, i, v) in enumerate(_toolkit_picks(hyps, log_probs, pen, K)):
            h = Hypothesis(hyps[i].tokens + [v], _times(c, pen), hyps[i].slot)
            if v == eos or t + 1 == max_len:
                h.normalized, h.slot = c, -1
                finished[b].append(h)
                top_ended = top_ended or r == 0
            else:
                new_live.append(h)
        return new_live, (top_ended and len(finished[b]) >= n_best) or not new_live

    run_slots(step, state, B, K, max_len, sos, advance)
    return [sorted(f, key=lambda h: -h.normalized)[:n_best] for f in finished]


@torch.no_grad()
def beam_search_joeynmt_steps(step, state, batch, beam, n_best, max_len, sos, eos, unk, alpha=-1.0):
    """JoeyNMT 2.x's beam_search: K places whose hypotheses all go on, an
    ended one too (past its end token; such continuations are never
    recorded); the K best candidates of a step (score / ((5 + t + 1) / 6)
    ** alpha when alpha > 0) take the places in order; a place that has
    held an ended hypothesis counts as finished from then on, and a row
    stops once every place has (all at max_len); a hypothesis is recorded
    with its penalised score when it has just ended (or at max_len without
    an end). Returns each row's recorded hypotheses by score (stable),
    n_best of them, filled up with [unk] scored -1."""
    K, B = int(beam), batch
    ended = [[False] * K for _ in range(B)]
    recorded = [[] for _ in range(B)]

    def advance(b, t, hyps, log_probs):
        pen = ((5.0 + (t + 1)) / 6.0) ** alpha if alpha > 0 else 1.0
        new = []
        for j, (c, i, v) in enumerate(_toolkit_picks(hyps, log_probs, pen, K)):
            h = Hypothesis(hyps[i].tokens + [v], _times(c, pen), hyps[i].slot)
            h.normalized = c
            new.append(h)
            if v == eos or c == float("-inf") or t + 1 == max_len:
                ended[b][j] = True
        for j, h in enumerate(new):
            n_end = h.tokens.count(eos)
            if ended[b][j] and ((n_end == 1 and h.tokens[-1] == eos) or (n_end == 0 and t + 1 == max_len)):
                kept = Hypothesis(list(h.tokens), h.score)
                kept.normalized = h.normalized
                recorded[b].append(kept)
        return new, all(ended[b])

    run_slots(step, state, B, K, max_len, sos, advance)
    out = []
    for b in range(B):
        hyps = sorted(recorded[b], key=lambda h: -h.normalized)[:n_best]
        while len(hyps) < n_best:
            filler = Hypothesis([unk], -1.0)
            filler.normalized = -1.0
            hyps.append(filler)
        out.append(hyps)
    return out


@torch.no_grad()
def beam_search_fairseq_steps(step, state, batch, beam, n_best, max_len, sos, eos, unk=-1, lenpen=1.0, unkpen=0.0):
    """fairseq 0.12's SequenceGenerator with its BeamSearch (beam 1 is its
    greedy decoding), on the same slots as beam_search_steps: NaN log-probs
    count as -inf, unkpen is taken off the unknown token's, and at the last
    step (max_len - 1: max_len counts the end token) only the end token
    may come; the 2K best candidates of the live hypotheses (float32 sums,
    the first hypothesis alone at the first step; never all of them: one
    fewer than there are) are ranked; an end token with a finite score
    among the first K finishes its hypothesis, its score divided by its
    length ** lenpen (float32), until K have finished, which ends the row,
    as the last step does; otherwise the first K candidates that are not
    such an end live on. Returns each row's n_best finished hypotheses by
    that normalised score."""
    K, B = int(beam), batch
    finished = [[] for _ in range(B)]
    last = max_len - 1
    ninf = float("-inf")

    def advance(b, t, hyps, log_probs):
        lp = log_probs.to(torch.float32).clone()
        lp[lp != lp] = ninf
        if unk >= 0 and unkpen:
            lp[:, unk] -= unkpen
        if t >= last:
            keep = lp[:, eos].clone()
            lp.fill_(ninf)
            lp[:, eos] = keep
        picks = _toolkit_picks(hyps, lp, 1, min(2 * K, lp.numel() - 1))
        ends = [(c, i, v) for c, i, v in picks[:K] if v == eos and c != ninf]
        for c, i, v in ends:
            if len(finished[b]) < K:
                h = Hypothesis(hyps[i].tokens + [v], c)
                h.normalized = float(torch.tensor([c], dtype=torch.float32) / (float(t + 1) ** lenpen))
                finished[b].append(h)
        if len(finished[b]) >= K or t >= last:
            return [], True
        new = [Hypothesis(hyps[i].tokens + [v], c, hyps[i].slot) for c, i, v in picks if not (v == eos and c != ninf)][:K]
        return new, not new

    run_slots(step, state, B, K, max_len, sos, advance)
    return [sorted(f, key=lambda h: -h.normalized)[:n_best] for f in finished]


@torch.no_grad()
def beam_search(model, source_ids, source_lengths, beam, max_len, sos=SOS_ID, eos=EOS_ID, alpha=1.0, rules=None,
                search="spec", n_best=None, onmt_penalty="avg", unk=0):
    """Beam search over the model: the encoder once per row, its outputs
    shared by the row's K hypotheses, rules (apply_rules) applied to every
    step's log-probs. Returns beam_search_steps' result."""
    model.eval()
    K = int(beam)
    B = source_ids.shape[0]
    enc, state = model.encoder(source_ids, source_lengths)
    rows = torch.arange(B).repeat_interleave(max(K, 1))
    enc_k = enc.index_select(0, rows)
    len_k = source_lengths.index_select(0, rows)
    state = tuple(t.index_select(1, rows) for t in state)

    t = [0]

    def step(inp, st):
        lp, nxt, _ = model.decoder(inp, st, enc_k, len_k)[:3]
        lp = apply_rules(lp, t[0], rules, eos, beam=True)
        t[0] += 1
        return lp, nxt

    if search == "opennmt":
        return beam_search_opennmt_steps(step, state, B, K, n_best or K, max_len, sos, eos, onmt_penalty, alpha)
    if search == "joeynmt":
        return beam_search_joeynmt_steps(step, state, B, K, n_best or K, max_len, sos, eos, unk, alpha)
    if search == "fairseq":
        return beam_search_fairseq_steps(step, state, B, K, n_best or K, max_len, sos, eos, unk, alpha)
    return beam_search_steps(step, state, B, K, max_len, sos, eos, alpha)


def apply_rules(log_probs, step, rules, eos, beam=False):
    """A toolkit's decoding rules (attnx.json's decoding: the ids greedy
    search or beam search never chooses, and the first step at which EOS
    may be chosen) applied to one step's log-probs [B, V]: -inf there."""
    if not rules:
        return log_probs
    banned = list(rules.get("beam_banned" if beam else "greedy_banned") or [])
    if step < int(rules.get("eos_from_step") or 0):
        banned.append(eos)
    if not banned:
        return log_probs
    out = log_probs.clone()
    out[:, banned] = float("-inf")
    return out
