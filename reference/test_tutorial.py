"""The PyTorch seq2seq translation tutorial's own way of running its models,
against the reference's batched implementation on the same weights.

The tutorial (pytorch/tutorials, intermediate_source/seq2seq_translation_tutorial.py)
exists in two versions, both GRU with SOS = 0 and EOS = 1:

- 2017-2023: EncoderRNN is fed one token at a time and its outputs are
  copied into a zero-filled [max_length, H] buffer; AttnDecoderRNN computes
  attention weights over max_length positions from [embedding; hidden],
  applies them to that buffer, then attn_combine + relu + GRU + out; its
  evaluate() calls the decoder one step at a time, feeding back topk(1),
  and stops after EOS or max_length steps.
- current: EncoderRNN (batch_first) runs over the whole sentence at once;
  AttnDecoderRNN.forward runs MAX_LENGTH forward_steps (BahdanauAttention
  with Wa, Ua, Va; GRU on [embedding; context]; out), feeding back the
  argmax of the raw outputs, then log_softmax; evaluate() cuts the tokens
  after the first EOS.

The classes below are written for this test from that description (the
modules in eval mode, so their dropout is the identity). Each sentence runs
alone (batch 1), the tutorial's way; the reference runs all sentences as one
ragged batch. Tokens must be identical and every step's log_probs and
attention within the spec's tolerance.

Run: /usr/bin/python3 -m unittest reference/test_tutorial.py
"""

import os
import sys
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnx_reference as ref  # noqa: E402

torch.set_num_threads(1)

SOS, EOS = ref.TUTORIAL_SOS_ID, ref.TUTORIAL_EOS_ID
RTOL, ATOL = 1.3e-6, 1e-5


def within(a, b):
    """|a - b| <= atol + rtol * |b| elementwise (spec tolerance), and the worst |a - b|."""
    diff = (a - b).abs()
    return bool((diff <= ATOL + RTOL * b.abs()).all()), float(diff.max()) if diff.numel() else 0.0


# ---------------------------------------------------------------------------
# The 2017-2023 version.


class Encoder2017(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.hidden_size = hidden
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden)

    def forward(self, token, hidden):
        x = self.embedding(token).view(1, 1, -1)
        return self.gru(x, hidden)


class AttnDecoder2017(nn.Module):
    def __init__(self, hidden, vocab, max_length, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.attn = nn.Linear(2 * hidden, max_length)
        self.attn_combine = nn.Linear(2 * hidden, hidden)
        self.dropout = nn.Dropout(dropout_p)
        self.gru = nn.GRU(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, token, hidden, encoder_outputs):
        e = self.dropout(self.embedding(token).view(1, 1, -1))
        weights = F.softmax(self.attn(torch.cat((e[0], hidden[0]), 1)), dim=1)        # 1 x M
        applied = torch.bmm(weights.unsqueeze(0), encoder_outputs.unsqueeze(0))       # 1 x 1 x H
        x = F.relu(self.attn_combine(torch.cat((e[0], applied[0]), 1)).unsqueeze(0))
        out, hidden = self.gru(x, hidden)
        return F.log_softmax(self.out(out[0]), dim=1), hidden, weights


@torch.no_grad()
def evaluate_2017(encoder, decoder, ids, max_length):
    """The 2017 evaluate(): tokens (EOS included), per-step log_probs [1,V]
    and attention weights [1,M], and the decoder inputs it fed."""
    hidden = torch.zeros(1, 1, encoder.hidden_size)
    buffer = torch.zeros(max_length, encoder.hidden_size)
    for i, t in enumerate(ids):
        out, hidden = encoder(torch.tensor([t]), hidden)
        buffer[i] += out[0, 0]
    token = torch.tensor([[SOS]])
    tokens, lps, atts, inputs = [], [], [], []
    for _ in range(max_length):
        inputs.append(int(token.reshape(-1)[0]))
        lp, hidden, w = decoder(token, hidden, buffer)
        lps.append(lp)
        atts.append(w)
        _, top = lp.topk(1)
        tokens.append(int(top.item()))
        if top.item() == EOS:
            break
        token = top.squeeze().detach()
    return tokens, lps, atts, inputs


# ---------------------------------------------------------------------------
# The current version.


class EncoderNow(nn.Module):
    def __init__(self, vocab, hidden, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, ids):
        return self.gru(self.dropout(self.embedding(ids)))


class BahdanauNow(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.Wa = nn.Linear(hidden, hidden)
        self.Ua = nn.Linear(hidden, hidden)
        self.Va = nn.Linear(hidden, 1)

    def forward(self, query, keys):
        s = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))                      # B x S x 1
        w = F.softmax(s.squeeze(2).unsqueeze(1), dim=-1)                              # B x 1 x S
        return torch.bmm(w, keys), w


class AttnDecoderNow(nn.Module):
    def __init__(self, hidden, vocab, max_len, dropout_p=0.1):
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(vocab, hidden)
        self.attention = BahdanauNow(hidden)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden):
        B = encoder_outputs.size(0)
        token = torch.full((B, 1), SOS, dtype=torch.long)
        hidden = encoder_hidden
        outs, atts, inputs = [], [], []
        for _ in range(self.max_len):
            inputs.append(int(token[0, 0]))
            out, hidden, w = self.step(token, hidden, encoder_outputs)
            outs.append(out)
            atts.append(w)
            _, top = out.topk(1)
            token = top.squeeze(-1).detach()
        return F.log_softmax(torch.cat(outs, dim=1), dim=-1), hidden, torch.cat(atts, dim=1), inputs

    def step(self, token, hidden, encoder_outputs):
        e = self.dropout(self.embedding(token))                                       # B x 1 x H
        ctx, w = self.attention(hidden.permute(1, 0, 2), encoder_outputs)
        out, hidden = self.gru(torch.cat((e, ctx), dim=2), hidden)
        return self.out(out), hidden, w


@torch.no_grad()
def evaluate_now(encoder, decoder, ids):
    """The current evaluate(): tokens cut after the first EOS, and the
    per-step log_probs [1,V], attention [1,S] and inputs up to there."""
    enc, hidden = encoder(torch.tensor([ids]))
    lps, _, att, inputs = decoder(enc, hidden)
    top = lps.topk(1)[1].reshape(-1).tolist()
    n = top.index(EOS) + 1 if EOS in top else len(top)
    return top[:n], [lps[:, t] for t in range(n)], [att[:, t] for t in range(n)], inputs[:n]


# ---------------------------------------------------------------------------


def tutorial_model(arch, hidden, vs, vt, seed, **kw):
    """A seeded reference model whose EOS logit is raised a little, so that
    some sentences stop at EOS and others run to the limit."""
    model = ref.make_model(arch, hidden, 1, vs, vt, seed, **kw)
    with torch.no_grad():
        model.decoder.out.bias[EOS] += 1.5
    return model


def split(state, prefix):
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def sentences(vocab, lengths, seed):
    """Source sentences as the tutorial makes them: word ids (here >= 2, so
    never SOS or EOS) followed by EOS."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(2, vocab, (n - 1,), generator=g).tolist() + [EOS] for n in lengths]


def batch_of(rows):
    S = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), S, dtype=torch.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
    return ids, torch.tensor([len(r) for r in rows])


class TutorialWay(unittest.TestCase):
    H, VS, VT = 16, 23, 29

    def check(self, model, rows, tutorial_runs, max_len):
        """tutorial_runs[i] = (tokens, lps, atts, inputs) of row i alone."""
        ids, lengths = batch_of(rows)
        toks, lens = ref.greedy_decode(model, ids, lengths, sos=SOS, eos=EOS, max_len=max_len, pad=0)
        # Teacher-force each row with the inputs the tutorial fed it.
        T = max(len(r[3]) for r in tutorial_runs)
        forced = torch.full((T, len(rows)), SOS, dtype=torch.int64)
        for i, r in enumerate(tutorial_runs):
            forced[:len(r[3]), i] = torch.tensor(r[3])
        steps = ref.run_steps(model, ids, lengths, T, sos=SOS, step_input_ids=forced)
        worst = 0.0
        for i, (tokens, lps, atts, _) in enumerate(tutorial_runs):
            self.assertEqual(toks[i, :lens[i]].tolist(), tokens, "row %d tokens" % i)
            n = len(rows[i])
            for t, (lp, att) in enumerate(zip(lps, atts)):
                ok, d = within(steps["log_probs"][t, i:i + 1], lp)
                self.assertTrue(ok, "row %d step %d log_probs: max |diff| %g" % (i, t, d))
                worst = max(worst, d)
                ok, d = within(steps["attention"][t, i:i + 1, :n], att[:, :n])
                self.assertTrue(ok, "row %d step %d attention: max |diff| %g" % (i, t, d))
                worst = max(worst, d)
        return worst

    def compare(self, label, arch, modules, evaluate, lengths, limit, **kw):
        """Seeds 1..3: the tutorial's modules (from modules(), loaded strictly
        from the reference model's encoder./decoder. keys) run each sentence
        alone with evaluate; the reference runs them as one ragged batch."""
        report = []
        for seed in (1, 2, 3):
            model = tutorial_model(arch, self.H, self.VS, self.VT, seed, **kw)
            sd = model.state_dict()
            enc, dec = modules()
            enc.load_state_dict(split(sd, "encoder."))  # strict: the tutorial's own key names
            dec.load_state_dict(split(sd, "decoder."))
            enc.eval(), dec.eval()
            rows = sentences(self.VS, lengths, seed)
            runs = [evaluate(enc, dec, r) for r in rows]
            worst = self.check(model, rows, runs, limit)
            report.append((seed, [len(r[0]) for r in runs], worst))
        decoded = [n for _, ns, _ in report for n in ns]
        # Meaningful only if some sentences stop at EOS and others run to the limit.
        self.assertTrue(min(decoded) < limit and max(decoded) == limit, decoded)
        print("\n  %s: seeds %s: tokens identical; decoded lengths %s; max |diff| %.3g"
              % (label, [s for s, _, _ in report], [n for _, n, _ in report], max(w for _, _, w in report)),
              file=sys.stderr)

    def test_2017_location_decoder(self):
        M = 10
        self.compare("tutorial-location (2017)", "tutorial-location",
                     lambda: (Encoder2017(self.VS, self.H), AttnDecoder2017(self.H, self.VT, M)),
                     lambda enc, dec, r: evaluate_2017(enc, dec, r, M), [4, 10, 1, 7, 2], M, max_length=M)

    def test_current_bahdanau_decoder(self):
        T = 10
        self.compare("tutorial-bahdanau (current)", "tutorial-bahdanau",
                     lambda: (EncoderNow(self.VS, self.H), AttnDecoderNow(self.H, self.VT, T)),
                     evaluate_now, [4, 12, 1, 7, 3], T)


if __name__ == "__main__":
    unittest.main()
