"""Tests of the PyTorch reference against a literal transcription of the
article's code (batch 1, full length, one layer), plus batching, masking and
config inference. Run: /usr/bin/python3 -m unittest reference/test_reference.py
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


def close(a, b, atol=1e-6):
    return a.shape == b.shape and bool(((a - b).abs() <= atol).all())


class ArticleEquivalence(unittest.TestCase):
    """Batch 1, full length, one layer: the spec modules are the article."""

    def test_same_keys_and_same_outputs(self):
        for arch in ref.ARCHS:
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


class Batching(unittest.TestCase):
    def test_ragged_batch_equals_rows_alone(self):
        lengths = torch.tensor([3, 6, 1, 5])
        g = torch.Generator().manual_seed(5)
        src = torch.randint(4, VS, (4, S), generator=g)
        for i, n in enumerate(lengths.tolist()):
            src[i, n:] = ref.PAD_ID
        for arch in ref.ARCHS:
            for L in (1, 2):
                with self.subTest(arch=arch, L=L):
                    model = ref.make_model(arch, H, L, VS, VT, seed=11)
                    steps = 6
                    batch = ref.run_steps(model, src, lengths, steps)
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
                            self.assertTrue(close(batch[k][:, i:i + 1], alone[k]), k)
                        for k in ("next_hidden", "next_cell"):
                            self.assertTrue(close(batch[k][:, :, i:i + 1], alone[k]), k)
                        self.assertTrue(close(batch["log_probs"][:, i:i + 1], alone["log_probs"]))
                        self.assertTrue(close(batch["attention"][:, i:i + 1, :n], alone["attention"]))

    def test_greedy_stops_at_eos(self):
        model = ref.make_model("luong-general", H, 1, VS, VT, seed=2)
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
            for arch in ref.ARCHS:
                for L in (1, 3):
                    for fmt in ("pt", "safetensors"):
                        with self.subTest(arch=arch, L=L, fmt=fmt):
                            m = ref.make_model(arch, 9, L, 14, 21, seed=4)
                            path = os.path.join(d, "m." + fmt)
                            ref.save_model(m, path)
                            got = ref.load_model(path)
                            self.assertEqual(got.config, {"arch": arch, "hidden": 9, "layers": L,
                                                          "src_vocab": 14, "tgt_vocab": 21})
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
        cases = {
            "missing embedding": {k: v for k, v in sd.items() if k != "encoder.embedding.weight"},
            "layer mismatch": {k: v for k, v in sd.items() if not k.startswith("decoder.lstm") or k.endswith("l0")},
            "bad shape": dict(sd, **{"decoder.weight": torch.zeros(2, 5)}),
        }
        for name, state in cases.items():
            with self.subTest(name):
                with self.assertRaises(ref.ReferenceError):
                    ref.model_from_state_dict(state)
        # attn_combine is optional
        state = {k: v for k, v in sd.items() if not k.startswith("decoder.attn_combine")}
        self.assertEqual(ref.model_from_state_dict(state).arch, "bahdanau")


if __name__ == "__main__":
    unittest.main()
