"""PyTorch reference for the attnx models (contract: /work/shared/spec/models.md).

The three modules of the source article (EncoderLSTM, BahdanauDecoder,
LuongDecoder with Attention dot/general/concat), generalised to batches,
ragged source lengths and stacked LSTM layers. At batch 1, full length and
one layer they compute exactly what the article's code computes (see
test_reference.py, which keeps a literal transcription of the article).

Dropout is left out: everything here is inference (and training of the demo
models does not need it).

Also here: a hand-written safetensors reader/writer (python3-safetensors is
not installed), checkpoint save/load with config inference from the
state_dict keys, and greedy decoding.
"""

import json
import os
import re
import struct
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

ARCHS = ("bahdanau", "luong-dot", "luong-general", "luong-concat")

PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3


class ReferenceError(Exception):
    """A user-facing error (bad checkpoint, bad inputs, bad arguments)."""


# --------------------------------------------------------------------------
# Models


class EncoderLSTM(nn.Module):
    """Embedding + LSTM over each row's own length (pack_padded_sequence)."""

    def __init__(self, vocab_size, hidden_size, n_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.lstm = nn.LSTM(hidden_size, hidden_size, n_layers, batch_first=True)

    def forward(self, source_ids, source_lengths):
        """source_ids [B,S] int64, source_lengths [B] int64 ->
        encoder_outputs [B,S,H] (zero past each length), (hidden, cell) [L,B,H]."""
        _, S = source_ids.shape
        embedded = self.embedding(source_ids)
        lengths = source_lengths.detach().to("cpu", torch.int64)
        check_lengths(lengths, S)
        if bool((lengths == S).all()):
            # Every row is full length: the plain LSTM is the same computation
            # (and bit-identical to the article's batch-1 code).
            output, (hidden, cell) = self.lstm(embedded)
            return output, (hidden, cell)
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        packed_out, (hidden, cell) = self.lstm(packed)
        output, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=S)
        return output, (hidden, cell)


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


class BahdanauDecoder(nn.Module):
    """Additive attention computed from the previous top-layer hidden state,
    context concatenated with the embedding as LSTM input."""

    def __init__(self, hidden_size, output_size, n_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.fc_hidden = nn.Linear(hidden_size, hidden_size, bias=False)
        self.fc_encoder = nn.Linear(hidden_size, hidden_size, bias=False)
        self.weight = nn.Parameter(_uniform_row(hidden_size))  # article: uninitialised FloatTensor
        self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)  # article: defined, never used
        self.lstm = nn.LSTM(hidden_size * 2, hidden_size, n_layers, batch_first=True)
        self.classifier = nn.Linear(hidden_size, output_size)

    def forward(self, input_ids, hidden, encoder_outputs, source_lengths):
        """input_ids [B], (hidden, cell) [L,B,H], encoder_outputs [B,S,H],
        source_lengths [B] -> log_probs [B,Vt], (next_hidden, next_cell), attention [B,S]."""
        h, c = hidden
        B, S, H = encoder_outputs.shape
        embedded = self.embedding(input_ids)                                   # B x H
        q = h[self.n_layers - 1]                                               # B x H
        x = torch.tanh(self.fc_hidden(q).unsqueeze(1) + self.fc_encoder(encoder_outputs))  # B x S x H
        scores = x.bmm(self.weight.unsqueeze(2).expand(B, H, 1)).squeeze(2)    # B x S
        scores = scores.masked_fill(length_mask(source_lengths, S), float("-inf"))
        attn = F.softmax(scores, dim=1)
        context = torch.bmm(attn.unsqueeze(1), encoder_outputs).squeeze(1)     # B x H
        lstm_in = torch.cat((embedded, context), 1).unsqueeze(1)               # B x 1 x 2H
        out, (h2, c2) = self.lstm(lstm_in, (h, c))
        log_probs = F.log_softmax(self.classifier(out[:, 0]), dim=1)
        return log_probs, (h2, c2), attn


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
    """LSTM step first, then attention from its output, classifier on [q; ctx]."""

    def __init__(self, hidden_size, output_size, method="dot", n_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.attention = Attention(hidden_size, method)
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.lstm = nn.LSTM(hidden_size, hidden_size, n_layers)
        self.classifier = nn.Linear(hidden_size * 2, output_size)

    def forward(self, input_ids, hidden, encoder_outputs, source_lengths):
        """Same interface as BahdanauDecoder.forward."""
        S = encoder_outputs.shape[1]
        embedded = self.embedding(input_ids).unsqueeze(0)                      # 1 x B x H
        lstm_out, (h2, c2) = self.lstm(embedded, hidden)
        q = lstm_out[0]                                                        # B x H
        scores = self.attention(q, encoder_outputs)
        scores = scores.masked_fill(length_mask(source_lengths, S), float("-inf"))
        attn = F.softmax(scores, dim=1)
        context = torch.bmm(attn.unsqueeze(1), encoder_outputs).squeeze(1)     # B x H
        output = torch.cat((q, context), -1)
        log_probs = F.log_softmax(self.classifier(output), dim=1)
        return log_probs, (h2, c2), attn


class Seq2Seq(nn.Module):
    """Wrapper whose state_dict keys are the spec's (encoder.*, decoder.*)."""

    def __init__(self, encoder, decoder, arch):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.arch = arch

    @property
    def config(self):
        return {
            "arch": self.arch,
            "hidden": self.encoder.hidden_size,
            "layers": self.encoder.n_layers,
            "src_vocab": self.encoder.embedding.num_embeddings,
            "tgt_vocab": self.decoder.output_size,
        }


def build_model(arch, H, L, Vs, Vt):
    """A freshly initialised (PyTorch defaults) model of the given config."""
    if arch not in ARCHS:
        raise ReferenceError("unknown arch %r, want one of %s" % (arch, ", ".join(ARCHS)))
    for name, v in (("hidden", H), ("layers", L), ("src-vocab", Vs), ("tgt-vocab", Vt)):
        if int(v) < 1:
            raise ReferenceError("%s = %d, want >= 1" % (name, v))
    encoder = EncoderLSTM(Vs, H, L)
    if arch == "bahdanau":
        decoder = BahdanauDecoder(H, Vt, L)
    else:
        decoder = LuongDecoder(H, Vt, arch.split("-", 1)[1], L)
    return Seq2Seq(encoder, decoder, arch)


def randomize(model, seed, std=0.5):
    """Seeded N(0, std) init of every parameter (incl. decoder.weight, which the
    article leaves uninitialised), in state_dict key order: deterministic."""
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std)
    return model


def make_model(arch, H, L, Vs, Vt, seed, std=0.5):
    """build_model + randomize, in eval mode."""
    return randomize(build_model(arch, H, L, Vs, Vt), seed, std).eval()


# --------------------------------------------------------------------------
# Config inference and checkpoint I/O

_LAYER_KEY = re.compile(r"^(encoder|decoder)\.lstm\.weight_ih_l(\d+)$")


def infer_config(state):
    """(arch, H, L, Vs, Vt) from state_dict keys and shapes (spec, Checkpoint layout)."""
    def need(key):
        if key not in state:
            raise ReferenceError("checkpoint lacks %s (not an attnx seq2seq state_dict?)" % key)
        return state[key]

    enc_emb = need("encoder.embedding.weight")
    dec_emb = need("decoder.embedding.weight")
    if enc_emb.dim() != 2 or dec_emb.dim() != 2:
        raise ReferenceError("embedding weights must be 2-D, got %s and %s"
                             % (tuple(enc_emb.shape), tuple(dec_emb.shape)))
    Vs, H = enc_emb.shape
    Vt, Hd = dec_emb.shape
    if Hd != H:
        raise ReferenceError("decoder.embedding.weight is %dx%d, want hidden size %d as in the encoder"
                             % (Vt, Hd, H))
    layers = {"encoder": -1, "decoder": -1}
    for k in state:
        m = _LAYER_KEY.match(k)
        if m:
            layers[m.group(1)] = max(layers[m.group(1)], int(m.group(2)))
    if layers["encoder"] < 0:
        raise ReferenceError("checkpoint lacks encoder.lstm.weight_ih_l0")
    if layers["decoder"] < 0:
        raise ReferenceError("checkpoint lacks decoder.lstm.weight_ih_l0")
    if layers["encoder"] != layers["decoder"]:
        raise ReferenceError("encoder has %d LSTM layers, decoder %d: they must be equal"
                             % (layers["encoder"] + 1, layers["decoder"] + 1))
    L = layers["encoder"] + 1
    if "decoder.fc_hidden.weight" in state:
        arch = "bahdanau"
    elif "decoder.attention.fc.weight" in state:
        arch = "luong-concat" if "decoder.attention.weight" in state else "luong-general"
    else:
        arch = "luong-dot"
    return arch, int(H), int(L), int(Vs), int(Vt)


def model_from_state_dict(state):
    """Build the model the keys describe and load the weights (strict, except
    Bahdanau's unused attn_combine may be absent)."""
    arch, H, L, Vs, Vt = infer_config(state)
    model = build_model(arch, H, L, Vs, Vt)
    expected = model.state_dict()
    missing = [k for k in expected if k not in state and not k.startswith("decoder.attn_combine.")]
    unexpected = [k for k in state if k not in expected]
    if missing or unexpected:
        raise ReferenceError("checkpoint keys do not match a %s model (H=%d, L=%d): missing %s, unexpected %s"
                             % (arch, H, L, missing, unexpected))
    for k, v in state.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ReferenceError("%s has shape %s, want %s for a %s model (H=%d, L=%d, Vs=%d, Vt=%d)"
                                 % (k, tuple(v.shape), tuple(expected[k].shape), arch, H, L, Vs, Vt))
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()}, strict=False)
    return model.eval()


def load_state(path):
    """A state_dict from a .pt (torch.save zip) or .safetensors file."""
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
        state = torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - report any unpickling problem as a user error
        raise ReferenceError("cannot load %s: %s" % (path, e))
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ReferenceError("%s does not hold a state_dict of tensors" % path)
    return state


def load_model(path):
    """Load a checkpoint (.pt or .safetensors), inferring the config from its keys."""
    return model_from_state_dict(load_state(path))


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
    Returns a dict of the `run` outputs (without the greedy ones)."""
    enc, (h, c) = model.encoder(source_ids, source_lengths)
    B = source_ids.shape[0]
    if step_input_ids is not None and tuple(step_input_ids.shape) != (steps, B):
        raise ReferenceError("step_input_ids has shape %s, want [steps=%d, batch=%d]"
                             % (tuple(step_input_ids.shape), steps, B))
    res = {"encoder_outputs": enc, "hidden": h, "cell": c}
    inputs, lps, nhs, ncs, atts, toks = [], [], [], [], [], []
    inp = torch.full((B,), sos, dtype=torch.int64)
    state = (h, c)
    for t in range(steps):
        if step_input_ids is not None:
            inp = step_input_ids[t].to(torch.int64)
        lp, state, attn = model.decoder(inp, state, enc, source_lengths)
        tok = lp.argmax(dim=1)
        inputs.append(inp)
        lps.append(lp)
        nhs.append(state[0])
        ncs.append(state[1])
        atts.append(attn)
        toks.append(tok)
        inp = tok
    H = enc.shape[2]
    L = h.shape[0]
    S = enc.shape[1]
    Vt = model.decoder.output_size
    res["step_input_ids"] = torch.stack(inputs) if steps else torch.zeros(0, B, dtype=torch.int64)
    res["log_probs"] = torch.stack(lps) if steps else torch.zeros(0, B, Vt)
    res["next_hidden"] = torch.stack(nhs) if steps else torch.zeros(0, L, B, H)
    res["next_cell"] = torch.stack(ncs) if steps else torch.zeros(0, L, B, H)
    res["attention"] = torch.stack(atts) if steps else torch.zeros(0, B, S)
    res["tokens"] = torch.stack(toks) if steps else torch.zeros(0, B, dtype=torch.int64)
    return res


@torch.no_grad()
def greedy_decode(model, source_ids, source_lengths, sos=SOS_ID, eos=EOS_ID, max_len=50, pad=PAD_ID):
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
        lp, state, _ = model.decoder(inp, state, enc, source_lengths)
        tok = lp.argmax(dim=1)
        live = ~done
        tokens[live, t] = tok[live]
        lengths[live] += 1
        done = done | (tok == eos)
        if bool(done.all()):
            break
        inp = tok
    return tokens, lengths
