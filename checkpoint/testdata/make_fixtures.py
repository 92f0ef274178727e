#!/usr/bin/python3
"""Make the tiny checkpoint fixtures used by the Go tests of package checkpoint.

Run from anywhere with Debian's /usr/bin/python3 (torch 1.13):

    /usr/bin/python3 checkpoint/testdata/make_fixtures.py

Every value is fixed (no randomness), so the Go tests can assert it.

The s2s_* files hold one model, the article's LSTM encoder and Bahdanau
decoder (H=2, Vs=5, Vt=6, L=1), saved each way people save it (a flat
state_dict, nested dicts, a training checkpoint, DataParallel, a Lightning
checkpoint, two files, the whole pickled module, the legacy format,
safetensors). The classes are defined here, so whole-module pickles name
__main__.Seq2Seq etc., as a training script's do. tut_* are PyTorch's
seq2seq tutorial (current version) with its attention's Wa/Ua/Va renamed
W1/W2/V; tiny_resnet.pt an unrelated model; evil_* pickles whose
unpickling in Python runs code (they create a file pwned-* in the working
directory).

The zip files come out byte for byte the same on every run; the legacy ones
(legacy.pt, s2s_legacy*.pt) do not, because the legacy format names each
storage by its memory address. Their content is the same.
"""
import collections
import json
import os
import struct
import subprocess

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def save(obj, name, **kw):
    torch.save(obj, path(name), **kw)


def dtypes():
    return collections.OrderedDict([
        ("f32", torch.tensor([[1.5, -2.25, 3.0], [4.0, 5.0, 0.125]], dtype=torch.float32)),
        ("f16", torch.tensor([1.0, -0.5, 65504.0, 2.0 ** -24], dtype=torch.float16)),
        ("bf16", torch.tensor([1.0, -2.5, 3.140625], dtype=torch.bfloat16)),
        ("f64", torch.tensor([0.1, -2.5], dtype=torch.float64)),
        ("i64", torch.tensor([1, -2, 1 << 40], dtype=torch.int64)),
        ("i32", torch.tensor([7, -8], dtype=torch.int32)),
        ("i16", torch.tensor([300, -300], dtype=torch.int16)),
        ("i8", torch.tensor([-128, 127], dtype=torch.int8)),
        ("u8", torch.tensor([0, 255], dtype=torch.uint8)),
        ("b", torch.tensor([True, False, True])),
        ("scalar", torch.tensor(3.5)),
        ("empty", torch.zeros(0, 3)),
    ])


# The article's modules (attribute names as in the article).
class EncoderLSTM(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.hidden_size = hidden
        self.embedding = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, 1, batch_first=True)


class BahdanauDecoder(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.fc_hidden = nn.Linear(hidden, hidden, bias=False)
        self.fc_encoder = nn.Linear(hidden, hidden, bias=False)
        self.weight = nn.Parameter(torch.zeros(1, hidden))
        self.attn_combine = nn.Linear(hidden * 2, hidden)
        self.lstm = nn.LSTM(hidden * 2, hidden, 1, batch_first=True)
        self.classifier = nn.Linear(hidden, vocab)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder


class LitSeq2Seq(nn.Module):
    """Stands for a LightningModule holding the model as self.model."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.criterion = nn.NLLLoss()


# PyTorch's seq2seq tutorial, current version (GRU, Bahdanau attention with
# biases), with the attention's Wa/Ua/Va called W1/W2/V.
class EncoderRNN(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)


class RenamedBahdanauAttention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.W1 = nn.Linear(hidden, hidden)
        self.W2 = nn.Linear(hidden, hidden)
        self.V = nn.Linear(hidden, 1)


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.attention = RenamedBahdanauAttention(hidden)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)


class TinyResNet(nn.Module):
    """The layout of a torchvision ResNet, at toy size."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.layer1 = nn.Sequential(collections.OrderedDict([("0", BasicBlock(4))]))
        self.fc = nn.Linear(4, 3)


class BasicBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(c)


def fill(module):
    """Give every parameter and buffer of module distinct exact values: the
    k-th tensor of state_dict() holds k + 0.125*j - 1 at flat index j (the Go
    tests compute the same)."""
    with torch.no_grad():
        for k, t in enumerate(module.state_dict().values()):
            if t.is_floating_point():
                t.copy_((torch.arange(t.numel(), dtype=torch.float32) * 0.125 + k - 1).view(t.shape))
    return module


def article_model():
    return fill(Seq2Seq(EncoderLSTM(5, 2), BahdanauDecoder(2, 6)))


def write_safetensors(tensors, name, metadata=None):
    """Safetensors written by hand: 8-byte little-endian header length, JSON
    header, then the data (python3-safetensors is not installed)."""
    codes = {torch.float32: "F32", torch.float16: "F16", torch.int64: "I64", torch.float64: "F64"}
    header = {"__metadata__": metadata} if metadata else {}
    data = b""
    for key, t in tensors.items():
        raw = t.contiguous().numpy().tobytes()
        header[key] = {"dtype": codes[t.dtype], "shape": list(t.shape),
                       "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    hdr = json.dumps(header).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(path(name), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        f.write(data)


def adam_state(model):
    """An optimizer state_dict after one step, on a copy of model (the
    fixture's weights keep their formula)."""
    copy = article_model()
    opt = torch.optim.Adam(copy.parameters(), lr=0.01)
    loss = sum((p * p).sum() for p in copy.parameters())
    loss.backward()
    opt.step()
    return opt.state_dict()


class Evil:
    """Unpickling this in Python calls fn(*args)."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def layouts():
    model = article_model()
    enc, dec = model.encoder, model.decoder
    sd = model.state_dict()
    save(sd, "s2s_flat.pt")
    save({"encoder": enc.state_dict(), "decoder": dec.state_dict()}, "s2s_nested.pt")
    save({"epoch": 7, "loss": 0.25, "model_state_dict": sd,
          "optimizer_state_dict": adam_state(model),
          "hparams": {"hidden": 2, "lr": 0.01, "arch": "bahdanau"}}, "s2s_training.pt")
    save(nn.DataParallel(model).state_dict(), "s2s_dataparallel.pt")
    lit = LitSeq2Seq(model)
    save({"epoch": 3, "global_step": 120, "pytorch-lightning_version": "1.9.4",
          "state_dict": lit.state_dict(),
          "loops": {"fit_loop": {"state_dict": {}, "epoch_progress": {"total": {"ready": 4}}}},
          "callbacks": {}, "optimizer_states": [adam_state(model)], "lr_schedulers": [],
          "hparams_name": "kwargs", "hyper_parameters": {"hidden": 2}}, "s2s_lightning.ckpt")
    save(enc.state_dict(), "s2s_encoder.pt")
    save(dec.state_dict(), "s2s_decoder.pt")
    save(model, "s2s_module.pt")
    save(enc, "s2s_encoder_module.pt")
    save(dec, "s2s_decoder_module.pt")
    save(sd, "s2s_legacy.pt", _use_new_zipfile_serialization=False)
    # torch.save(module) in the legacy format stores each module class's
    # source text (30 kB for nn.LSTM's); without it the file stays small and
    # the format is the same (the source is optional: None when unavailable).
    real = torch.serialization.get_source_lines_and_file
    torch.serialization.get_source_lines_and_file = None  # calling it fails: no source
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            save(model, "s2s_legacy_module.pt", _use_new_zipfile_serialization=False)
    finally:
        torch.serialization.get_source_lines_and_file = real
    write_safetensors(nn.DataParallel(model).state_dict(), "s2s_dataparallel.safetensors", {"format": "pt"})
    renamed = collections.OrderedDict()
    for k, v in sd.items():
        k = {"decoder.fc_hidden.weight": "decoder.attention.W1.weight",
             "decoder.fc_encoder.weight": "decoder.attention.W2.weight",
             "decoder.weight": "decoder.attention.V.weight"}.get(k, k)
        renamed[k] = v
    save(renamed, "s2s_renamed.pt")

    # The tutorial's two modules, saved as the tutorial's users do: two files.
    save(fill(EncoderRNN(5, 3)).state_dict(), "tut_encoder.pt")
    save(fill(AttnDecoderRNN(3, 6)).state_dict(), "tut_decoder_w1w2v.pt")
    save(fill(TinyResNet()).state_dict(), "tiny_resnet.pt")

    # Pickles that run code when Python unpickles them, beside real weights.
    tiny = fill(nn.Linear(2, 1)).state_dict()
    for name, fn, args in [
        ("evil_system.pt", os.system, ("touch pwned-system",)),
        ("evil_open.pt", open, ("pwned-open", "w")),
        ("evil_subprocess.pt", subprocess.call, (["touch", "pwned-subprocess"],)),
        ("evil_eval.pt", eval, ("open('pwned-eval', 'w').close()",)),
    ]:
        save({"state_dict": tiny, "epoch": Evil(fn, *args)}, name)
    model.decoder.hook = Evil(os.system, "touch pwned-module")
    save(model, "evil_module.pt")
    del model.decoder.hook


def main():
    save(dtypes(), "dtypes.pt")

    # A transposed (non-contiguous) tensor: torch.save keeps its strides.
    save({"t": torch.arange(6.0).view(2, 3).t()}, "transposed.pt")

    # Views sharing one storage: offset, reshaped and strided.
    base = torch.arange(10.0)
    save(collections.OrderedDict([
        ("whole", base.view(2, 5)),
        ("slice", base[2:5]),
        ("every2", base[::2]),
    ]), "shared.pt")

    # A real module's state_dict (OrderedDict with _metadata).
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        lin.bias.copy_(torch.tensor([0.5, -0.5]))
    save(lin.state_dict(), "linear.pt")

    # Training-script checkpoints holding the state dict under a key.
    save({"epoch": 3, "state_dict": lin.state_dict(),
          "optimizer": {"lr": 0.1, "state": {}}}, "nested_state_dict.pt")
    save({"model": lin.state_dict(), "step": 10}, "nested_model.pt")

    # Not a dict of tensors.
    save([torch.ones(2)], "list.pt")
    save({"w": torch.ones(2), "n": 5}, "notensor.pt")

    # Legacy (pre-1.6) serialization.
    save({"w": torch.ones(2)}, "legacy.pt", _use_new_zipfile_serialization=False)

    # Safetensors written by hand: 8-byte little-endian header length, JSON
    # header, then the data.
    tensors = [
        ("a", "F32", [2, 2], struct.pack("<4f", 1.0, -2.0, 0.5, 8.0)),
        ("h", "F16", [2], torch.tensor([1.5, -3.0], dtype=torch.float16).numpy().tobytes()),
        ("bf", "BF16", [2], torch.tensor([1.0, -2.5], dtype=torch.bfloat16).view(torch.int16).numpy().tobytes()),
        ("n", "I64", [3], struct.pack("<3q", 1, -2, 3)),
        ("d", "F64", [], struct.pack("<d", 2.75)),
    ]
    header = {"__metadata__": {"format": "pt", "source": "make_fixtures.py"}}
    data = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    hdr = json.dumps(header).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(path("hand.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        f.write(data)

    layouts()


if __name__ == "__main__":
    main()
