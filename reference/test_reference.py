"""Tests of the PyTorch reference against a literal transcription of the
article's code (batch 1, full length, one layer), plus batching, masking and
config inference, for every architecture and cell.
Run: /usr/bin/python3 -m unittest reference/test_reference.py
"""

import os
import sys
import tempfile
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnx_reference as ref  # noqa: E402
import toolkits  # noqa: E402

torch.set_num_threads(1)

# ---------------------------------------------------------------------------
# Literal transcription of the article (Gabriel Loye, "Attention Mechanism",
# FloydHub; translated in ../../../shared/seed/attention-article.txt). Only
# changes: no device, dropout modules kept but the modules run in eval mode.

device = torch.device("cpu")


class ArticleEncoderLSTM(nn.Module):
    def __init__(self, input_size, hidden_size, n_layers=1, drop_prob=0):
        super(ArticleEncoderLSTM, self).__init__()
        self.hidden_size = hidden_size
        self.n_layers = n_layers

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.lstm = nn.LSTM(hidden_size, hidden_size, n_layers, dropout=drop_prob, batch_first=True)

    def forward(self, inputs, hidden):
        # Embed input words
        embedded = self.embedding(inputs)
        # Pass the embedded word vectors into LSTM and return all outputs
        output, hidden = self.lstm(embedded, hidden)
        return output, hidden

    def init_hidden(self, batch_size=1):
        return (torch.zeros(self.n_layers, batch_size, self.hidden_size, device=device),
                torch.zeros(self.n_layers, batch_size, self.hidden_size, device=device))


class ArticleBahdanauDecoder(nn.Module):
    def __init__(self, hidden_size, output_size, n_layers=1, drop_prob=0.1):
        super(ArticleBahdanauDecoder, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.drop_prob = drop_prob

        self.embedding = nn.Embedding(self.output_size, self.hidden_size)

        self.fc_hidden = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.fc_encoder = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.weight = nn.Parameter(torch.FloatTensor(1, hidden_size))
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(self.drop_prob)
        self.lstm = nn.LSTM(self.hidden_size * 2, self.hidden_size, batch_first=True)
        self.classifier = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, inputs, hidden, encoder_outputs):
        encoder_outputs = encoder_outputs.squeeze()
        # Embed input words
        embedded = self.embedding(inputs).view(1, -1)
        embedded = self.dropout(embedded)

        # Calculating Alignment Scores
        x = torch.tanh(self.fc_hidden(hidden[0]) + self.fc_encoder(encoder_outputs))
        alignment_scores = x.bmm(self.weight.unsqueeze(2))

        # Softmaxing alignment scores to get Attention weights
        attn_weights = F.softmax(alignment_scores.view(1, -1), dim=1)

        # Multiplying the Attention weights with encoder outputs to get the context vector
        context_vector = torch.bmm(attn_weights.unsqueeze(0),
                                   encoder_outputs.unsqueeze(0))

        # Concatenating context vector with embedded input word
        output = torch.cat((embedded, context_vector[0]), 1).unsqueeze(0)
        # Passing the concatenated vector as input to the LSTM cell
        output, hidden = self.lstm(output, hidden)
        # Passing the LSTM output through a Linear layer acting as a classifier
        output = F.log_softmax(self.classifier(output[0]), dim=1)
        return output, hidden, attn_weights


class ArticleLuongDecoder(nn.Module):
    def __init__(self, hidden_size, output_size, attention, n_layers=1, drop_prob=0.1):
        super(ArticleLuongDecoder, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.drop_prob = drop_prob

        # The Attention Mechanism is defined in a separate class
        self.attention = attention

        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.dropout = nn.Dropout(self.drop_prob)
        self.lstm = nn.LSTM(self.hidden_size, self.hidden_size)
        self.classifier = nn.Linear(self.hidden_size * 2, self.output_size)

    def forward(self, inputs, hidden, encoder_outputs):
        # Embed input words
        embedded = self.embedding(inputs).view(1, 1, -1)
        embedded = self.dropout(embedded)

        # Passing previous output word (embedded) and hidden state into LSTM cell
        lstm_out, hidden = self.lstm(embedded, hidden)

        # Calculating Alignment Scores - see Attention class for the forward pass function
        alignment_scores = self.attention(lstm_out, encoder_outputs)
        # Softmaxing alignment scores to obtain Attention weights
        attn_weights = F.softmax(alignment_scores.view(1, -1), dim=1)

        # Multiplying Attention weights with encoder outputs to get context vector
        context_vector = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs)

        # Concatenating output from LSTM with context vector
        output = torch.cat((lstm_out, context_vector), -1)
        # Pass concatenated vector through Linear layer acting as a Classifier
        output = F.log_softmax(self.classifier(output[0]), dim=1)
        return output, hidden, attn_weights


class ArticleAttention(nn.Module):
    def __init__(self, hidden_size, method="dot"):
        super(ArticleAttention, self).__init__()
        self.method = method
        self.hidden_size = hidden_size

        # Defining the layers/weights required depending on alignment scoring method
        if method == "general":
            self.fc = nn.Linear(hidden_size, hidden_size, bias=False)

        elif method == "concat":
            self.fc = nn.Linear(hidden_size, hidden_size, bias=False)
            self.weight = nn.Parameter(torch.FloatTensor(1, hidden_size))

    def forward(self, decoder_hidden, encoder_outputs):
        if self.method == "dot":
            # For the dot scoring method, no weights or linear layers are involved
            return encoder_outputs.bmm(decoder_hidden.view(1, -1, 1)).squeeze(-1)

        elif self.method == "general":
            # For general scoring, decoder hidden state is passed through linear layers to introduce a weight matrix
            out = self.fc(decoder_hidden)
            return encoder_outputs.bmm(out.view(1, -1, 1)).squeeze(-1)

        elif self.method == "concat":
            # For concat scoring, decoder hidden state and encoder outputs are concatenated first
            out = torch.tanh(self.fc(decoder_hidden + encoder_outputs))
            return out.bmm(self.weight.unsqueeze(-1)).squeeze(-1)


class ArticleSeq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder


def article_model(arch, H, Vs, Vt):
    enc = ArticleEncoderLSTM(Vs, H)
    if arch == "bahdanau":
        dec = ArticleBahdanauDecoder(H, Vt)
    else:
        dec = ArticleLuongDecoder(H, Vt, ArticleAttention(H, arch.split("-")[1]))
    return ArticleSeq2Seq(enc, dec).eval()


# ---------------------------------------------------------------------------

H, VS, VT, S = 11, 17, 19, 6

# Every architecture with every cell it allows.
CONFIGS = [(a, c) for a in ref.ARTICLE_ARCHS for c in ref.CELLS] + [(a, "gru") for a in ref.TUTORIAL_ARCHS]


def close(a, b, atol=1e-6):
    return a.shape == b.shape and bool(((a - b).abs() <= atol).all())


def model_for(arch, cell, hidden, layers, vs, vt, seed, embedding_size=None, max_length=8):
    """make_model with max_length only where the arch has one."""
    kw = {"cell": cell, "embedding_size": embedding_size}
    if arch == "tutorial-location":
        kw["max_length"] = max_length
    return ref.make_model(arch, hidden, layers, vs, vt, seed, **kw)


class ArticleEquivalence(unittest.TestCase):
    """Batch 1, full length, one layer: the spec modules are the article."""

    def test_same_keys_and_same_outputs(self):
        for arch in ref.ARTICLE_ARCHS:
            with self.subTest(arch=arch):
                model = ref.make_model(arch, H, 1, VS, VT, seed=7)
                art = article_model(arch, H, VS, VT)
                self.assertEqual(sorted(art.state_dict().keys()), sorted(model.state_dict().keys()))
                art.load_state_dict(model.state_dict())
                g = torch.Generator().manual_seed(3)
                src = torch.randint(4, VS, (1, S), generator=g)
                with torch.no_grad():
                    a_out, a_hid = art.encoder(src, art.encoder.init_hidden())
                    m_out, m_hid = model.encoder(src, torch.tensor([S]))
                    self.assertTrue(torch.equal(a_out, m_out), arch)
                    self.assertTrue(torch.equal(a_hid[0], m_hid[0]))
                    self.assertTrue(torch.equal(a_hid[1], m_hid[1]))
                    a_state, m_state = a_hid, m_hid
                    inp = torch.tensor([ref.SOS_ID])
                    spreads = []
                    for step in range(5):
                        a_lp, a_state, a_att = art.decoder(inp, a_state, a_out)
                        m_lp, m_state, m_att = model.decoder(inp, m_state, m_out, torch.tensor([S]))
                        self.assertTrue(close(a_lp, m_lp), "%s step %d log_probs" % (arch, step))
                        self.assertTrue(close(a_att, m_att), "%s step %d attention" % (arch, step))
                        self.assertTrue(close(a_state[0], m_state[0]), "%s step %d hidden" % (arch, step))
                        self.assertTrue(close(a_state[1], m_state[1]), "%s step %d cell" % (arch, step))
                        spreads.append(float(m_att.max() - m_att.min()))
                        inp = m_lp.argmax(dim=1)
                    # attention must not be near-uniform for the test to mean something
                    self.assertGreater(sum(spreads) / len(spreads), 0.02, arch)


class Cells(unittest.TestCase):
    def test_gru_state_and_keys(self):
        """A GRU model has a one-tensor state, 3H-row weights under `gru.`,
        and PyTorch's GRU semantics: n = tanh(W_in x + b_in + r * (W_hn h + b_hn))."""
        for arch in ref.ARTICLE_ARCHS:
            with self.subTest(arch=arch):
                m = ref.make_model(arch, 5, 2, 9, 10, seed=3, cell="gru")
                sd = m.state_dict()
                self.assertEqual(list(sd["encoder.gru.weight_hh_l1"].shape), [15, 5])
                self.assertFalse(any(".lstm." in k for k in sd))
                src = torch.tensor([[4, 5, 6]])
                enc, state = m.encoder(src, torch.tensor([3]))
                self.assertEqual(len(state), 1)
                # One GRU step by hand against nn.GRU (one layer).
                m = ref.make_model(arch, 5, 1, 9, 10, seed=3, cell="gru")
                gru = m.encoder.gru
                x = m.encoder.embedding(src)[0, 0]
                h = torch.zeros(5)
                gi = gru.weight_ih_l0 @ x + gru.bias_ih_l0
                gh = gru.weight_hh_l0 @ h + gru.bias_hh_l0
                r = torch.sigmoid(gi[:5] + gh[:5])
                z = torch.sigmoid(gi[5:10] + gh[5:10])
                n = torch.tanh(gi[10:] + r * gh[10:])
                h1 = (1 - z) * n + z * h
                out0, _ = gru(m.encoder.embedding(src)[:, :1])
                self.assertTrue(close(out0[0, 0], h1), arch)

    def test_gru_under_lstm_attribute(self):
        """An article model holding nn.GRU under the attribute `lstm` (3H rows)
        loads as a GRU and computes what the `gru`-named model computes."""
        for arch in ref.ARTICLE_ARCHS:
            with self.subTest(arch=arch):
                m = ref.make_model(arch, 6, 2, 9, 10, seed=5, cell="gru")
                renamed = {k.replace(".gru.", ".lstm."): v for k, v in m.state_dict().items()}
                got = ref.model_from_state_dict(renamed)
                self.assertEqual(got.cell, "gru")
                self.assertEqual(got.encoder.rnn_attr, "lstm")
                src = torch.tensor([[4, 5, 6, 7], [8, 4, 0, 0]])
                lengths = torch.tensor([4, 2])
                a = ref.run_steps(m, src, lengths, 3)
                b = ref.run_steps(got, src, lengths, 3)
                self.assertEqual(sorted(a), sorted(b))
                for k in a:
                    self.assertTrue(torch.equal(a[k], b[k]), k)

    def test_embedding_size(self):
        """E != H: encoder RNN input E, Bahdanau layer-0 input E + H, Luong E,
        tutorial-bahdanau E + H, tutorial-location attn/attn_combine E + H."""
        E, Hh = 4, 7
        want_ih0 = {"bahdanau": E + Hh, "luong-dot": E, "luong-general": E, "luong-concat": E,
                    "tutorial-bahdanau": E + Hh, "tutorial-location": Hh}
        for arch, cell in CONFIGS:
            with self.subTest(arch=arch, cell=cell):
                m = model_for(arch, cell, Hh, 1, 9, 10, seed=2, embedding_size=E)
                sd = m.state_dict()
                rnn = m.decoder.rnn_attr
                self.assertEqual(list(sd["encoder.embedding.weight"].shape), [9, E])
                self.assertEqual(sd["encoder.%s.weight_ih_l0" % m.encoder.rnn_attr].shape[1], E)
                self.assertEqual(sd["decoder.%s.weight_ih_l0" % rnn].shape[1], want_ih0[arch])
                if arch == "tutorial-location":
                    self.assertEqual(list(sd["decoder.attn.weight"].shape), [8, E + Hh])
                    self.assertEqual(list(sd["decoder.attn_combine.weight"].shape), [Hh, E + Hh])
                self.assertEqual(ref.model_from_state_dict(sd).config["embedding_size"], E)
                out = ref.run_steps(m, torch.tensor([[4, 5, 6], [7, 0, 0]]), torch.tensor([3, 1]), 2)
                self.assertEqual(list(out["log_probs"].shape), [2, 2, 10])


class Tutorial(unittest.TestCase):
    def test_location_attention_over_max_length(self):
        """tutorial-location: weights over M (not normalised over the source),
        context from the first S positions, sources longer than M refused."""
        m = model_for("tutorial-location", "gru", 6, 1, 9, 10, seed=4, max_length=5)
        src = torch.tensor([[4, 5, 6], [7, 8, 0]])
        out = ref.run_steps(m, src, torch.tensor([3, 2]), 2)
        att = out["attention"]
        self.assertEqual(list(att.shape), [2, 2, 3])
        self.assertTrue(bool((att[:, 1, 2] == 0).all()))
        self.assertTrue(bool((att.sum(-1) < 1).all()))  # the mass on positions 3..4 of M = 5 is lost
        with self.assertRaises(ref.ReferenceError) as cm:
            ref.run_steps(m, torch.randint(4, 9, (1, 6)), torch.tensor([6]), 1)
        self.assertIn("max_length M = 5", str(cm.exception))

    def test_tutorial_keys(self):
        """The state_dict keys are the tutorial modules' own."""
        want = {
            "tutorial-location": ["decoder.attn.bias", "decoder.attn.weight", "decoder.attn_combine.bias",
                                  "decoder.attn_combine.weight", "decoder.embedding.weight",
                                  "decoder.gru.bias_hh_l0", "decoder.gru.bias_ih_l0", "decoder.gru.weight_hh_l0",
                                  "decoder.gru.weight_ih_l0", "decoder.out.bias", "decoder.out.weight"],
            "tutorial-bahdanau": ["decoder.attention.Ua.bias", "decoder.attention.Ua.weight",
                                  "decoder.attention.Va.bias", "decoder.attention.Va.weight",
                                  "decoder.attention.Wa.bias", "decoder.attention.Wa.weight",
                                  "decoder.embedding.weight", "decoder.gru.bias_hh_l0", "decoder.gru.bias_ih_l0",
                                  "decoder.gru.weight_hh_l0", "decoder.gru.weight_ih_l0", "decoder.out.bias",
                                  "decoder.out.weight"],
        }
        enc = ["encoder.embedding.weight", "encoder.gru.bias_hh_l0", "encoder.gru.bias_ih_l0",
               "encoder.gru.weight_hh_l0", "encoder.gru.weight_ih_l0"]
        for arch, keys in want.items():
            with self.subTest(arch=arch):
                m = model_for(arch, "gru", 4, 1, 6, 7, seed=1)
                self.assertEqual(sorted(m.state_dict()), sorted(enc + keys))
        with self.assertRaises(ref.ReferenceError):
            ref.build_model("tutorial-bahdanau", 4, 1, 6, 7, cell="lstm")
        with self.assertRaises(ref.ReferenceError):
            ref.build_model("tutorial-location", 4, 1, 6, 7)  # no max_length


class Batching(unittest.TestCase):
    def test_ragged_batch_equals_rows_alone(self):
        lengths = torch.tensor([3, 6, 1, 5])
        g = torch.Generator().manual_seed(5)
        src = torch.randint(4, VS, (4, S), generator=g)
        for i, n in enumerate(lengths.tolist()):
            src[i, n:] = ref.PAD_ID
        for arch, cell in CONFIGS:
            for L in (1, 2):
                with self.subTest(arch=arch, cell=cell, L=L):
                    model = model_for(arch, cell, H, L, VS, VT, seed=11)
                    steps = 6
                    batch = ref.run_steps(model, src, lengths, steps)
                    self.assertEqual("cell" in batch, cell == "lstm")
                    self.assertEqual("next_cell" in batch, cell == "lstm")
                    # encoder outputs exactly zero past length; attention exactly zero past length
                    for i, n in enumerate(lengths.tolist()):
                        self.assertTrue(bool((batch["encoder_outputs"][i, n:] == 0).all()))
                        self.assertTrue(bool((batch["attention"][:, i, n:] == 0).all()))
                        self.assertTrue(bool((batch["attention"][:, i, :n] > 0).all()))
                    for i, n in enumerate(lengths.tolist()):
                        alone = ref.run_steps(model, src[i:i + 1, :n], lengths[i:i + 1], steps,
                                              step_input_ids=batch["step_input_ids"][:, i:i + 1])
                        self.assertTrue(close(batch["encoder_outputs"][i:i + 1, :n], alone["encoder_outputs"]))
                        for k in ("hidden", "cell"):
                            if k in batch:
                                self.assertTrue(close(batch[k][:, i:i + 1], alone[k]), k)
                        for k in ("next_hidden", "next_cell"):
                            if k in batch:
                                self.assertTrue(close(batch[k][:, :, i:i + 1], alone[k]), k)
                        self.assertTrue(close(batch["log_probs"][:, i:i + 1], alone["log_probs"]))
                        self.assertTrue(close(batch["attention"][:, i:i + 1, :n], alone["attention"]))

    def test_greedy_stops_at_eos(self):
        for arch, cell in (("luong-general", "lstm"), ("bahdanau", "gru"), ("tutorial-bahdanau", "gru")):
            with self.subTest(arch=arch, cell=cell):
                model = model_for(arch, cell, H, 1, VS, VT, seed=2)
                src = torch.randint(4, VS, (4, S), generator=torch.Generator().manual_seed(1))
                lengths = torch.tensor([S, 2, 4, 3])
                free = ref.run_steps(model, src, lengths, 12)["tokens"]
                toks, lens = ref.greedy_decode(model, src, lengths, max_len=12)
                for i in range(4):
                    row = free[:, i].tolist()
                    n = row.index(ref.EOS_ID) + 1 if ref.EOS_ID in row else 12
                    self.assertEqual(int(lens[i]), n)
                    self.assertEqual(toks[i, :n].tolist(), row[:n])
                    self.assertTrue(bool((toks[i, n:] == ref.PAD_ID).all()))

    def test_bad_lengths_rejected(self):
        model = ref.make_model("luong-dot", H, 1, VS, VT, seed=2)
        src = torch.randint(4, VS, (2, S))
        for bad in ([0, 3], [S + 1, 3]):
            with self.assertRaises(ref.ReferenceError):
                model.encoder(src, torch.tensor(bad))


class Checkpoints(unittest.TestCase):
    def test_load_model_infers_config(self):
        with tempfile.TemporaryDirectory() as d:
            for arch, cell in CONFIGS:
                for L, E in ((1, 9), (3, 5)):
                    for fmt in ("pt", "safetensors"):
                        with self.subTest(arch=arch, cell=cell, L=L, E=E, fmt=fmt):
                            m = model_for(arch, cell, 9, L, 14, 21, seed=4, embedding_size=E, max_length=6)
                            path = os.path.join(d, "m." + fmt)
                            ref.save_model(m, path)
                            got = toolkits.load_model(path)
                            want = {"arch": arch, "cell": cell, "hidden": 9, "embedding_size": E, "layers": L,
                                    "src_vocab": 14, "tgt_vocab": 21}
                            if arch == "tutorial-location":
                                want["max_length"] = 6
                            self.assertEqual(got.config, want)
                            for k, v in m.state_dict().items():
                                self.assertTrue(torch.equal(v, got.state_dict()[k]), k)

    def test_safetensors_roundtrip_and_metadata(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.safetensors")
            ts = {"a": torch.arange(6, dtype=torch.int64).reshape(2, 3),
                  "b": torch.randn(3, 1, 2), "c": torch.zeros(0, 4)}
            ref.write_safetensors(p, ts, {"k": "v"})
            with open(p, "rb") as f:
                raw = f.read()
            self.assertEqual((int.from_bytes(raw[:8], "little") + 8) % 8, 0)
            got, meta = ref.read_safetensors(p)
            self.assertEqual(meta, {"k": "v"})
            for k in ts:
                self.assertEqual(got[k].dtype, ts[k].dtype)
                self.assertTrue(torch.equal(got[k], ts[k]))

    def test_bad_checkpoints(self):
        m = ref.make_model("bahdanau", 5, 2, 7, 8, seed=1)
        sd = m.state_dict()
        g = ref.make_model("luong-dot", 5, 1, 7, 8, seed=1, cell="gru").state_dict()
        lstm_luong = ref.make_model("luong-dot", 5, 1, 7, 8, seed=1).state_dict()
        cases = {
            "missing embedding": ({k: v for k, v in sd.items() if k != "encoder.embedding.weight"},
                                  "lacks encoder.embedding.weight"),
            "layer mismatch": ({k: v for k, v in sd.items() if not k.startswith("decoder.lstm") or k.endswith("l0")},
                               "encoder has 2 LSTM layers, decoder 1"),
            "bad shape": (dict(sd, **{"decoder.weight": torch.zeros(2, 5)}), "decoder.weight has shape [2, 5], want [1, 5]"),
            "cell mismatch": (dict({k: v for k, v in g.items() if k.startswith("encoder.")},
                                   **{k: v for k, v in lstm_luong.items() if k.startswith("decoder.")}),
                              "encoder is GRU, decoder LSTM"),
            "gru attribute with 4H rows": ({k.replace(".lstm.", ".gru."): v for k, v in lstm_luong.items()},
                                           "an attribute named gru must hold a GRU"),
            "neither 3H nor 4H": (dict(lstm_luong, **{"encoder.lstm.weight_hh_l0": torch.zeros(10, 5)}),
                                  "neither 4H (LSTM) nor 3H (GRU)"),
            "embedding sizes differ": (dict(lstm_luong, **{"decoder.embedding.weight": torch.zeros(8, 4)}),
                                       "want embedding size 5"),
            "unknown decoder": ({k: v for k, v in lstm_luong.items() if not k.startswith("decoder.classifier")},
                                "cannot tell the decoder architecture"),
            "tutorial with LSTM": (dict(lstm_luong, **{"decoder.attention.Wa.weight": torch.zeros(5, 5)}),
                                   "GRU only"),
        }
        for name, (state, want) in cases.items():
            with self.subTest(name):
                with self.assertRaises(ref.ReferenceError) as cm:
                    ref.model_from_state_dict(state)
                self.assertIn(want, str(cm.exception))
        # attn_combine is optional for the article's Bahdanau, and ignored whatever its shape
        state = {k: v for k, v in sd.items() if not k.startswith("decoder.attn_combine")}
        self.assertEqual(ref.model_from_state_dict(state).arch, "bahdanau")
        state["decoder.attn_combine.weight"] = torch.zeros(3, 3)
        self.assertEqual(ref.model_from_state_dict(state).arch, "bahdanau")


class NothingExecutes(unittest.TestCase):
    """A .pt whose pickle calls a function is refused: torch.load runs with
    weights_only=True, so the callable never runs."""

    def test_malicious_pickle_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            marker = os.path.join(d, "pwned")
            path = os.path.join(d, "evil.pt")
            torch.save({"encoder.embedding.weight": _Evil(marker)}, path)
            self.assertFalse(os.path.exists(marker))
            with self.assertRaises(ref.ReferenceError) as cm:
                toolkits.load_model(path)
            self.assertIn("weights_only=True", str(cm.exception))
            self.assertFalse(os.path.exists(marker), "loading the checkpoint ran the pickled callable")


class _Evil:
    """Pickles as a call of builtins.open(marker, 'w'): unpickling it
    without restrictions would create the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


if __name__ == "__main__":
    unittest.main()
