"""A bentrevett tutorial 3 model written for attnx's tests (not the
tutorial's code) with the tutorial's call conventions and 2020 key names:
Seq2Seq(encoder, decoder); encoder(src [S, 1]) -> (outputs, hidden [1, H]);
decoder(input [1], hidden, outputs) -> (prediction, hidden, attention)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, vocab, emb, h, H):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, h, bidirectional=True)
        self.fc = nn.Linear(2 * h, H)

    def forward(self, src):
        outputs, hidden = self.rnn(self.embedding(src))
        return outputs, torch.tanh(self.fc(torch.cat((hidden[-2], hidden[-1]), dim=1)))


class Attention(nn.Module):
    def __init__(self, h, H):
        super().__init__()
        self.attn = nn.Linear(2 * h + H, H)
        self.v = nn.Linear(H, 1, bias=False)

    def forward(self, hidden, outputs):
        S = outputs.shape[0]
        q = hidden.unsqueeze(1).repeat(1, S, 1)
        energy = torch.tanh(self.attn(torch.cat((q, outputs.permute(1, 0, 2)), dim=2)))
        return F.softmax(self.v(energy).squeeze(2), dim=1)


class Decoder(nn.Module):
    def __init__(self, vocab, emb, h, H):
        super().__init__()
        self.attention = Attention(h, H)
        self.embedding = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(2 * h + emb, H)
        self.fc_out = nn.Linear(2 * h + H + emb, vocab)

    def forward(self, inp, hidden, outputs):
        embedded = self.embedding(inp.unsqueeze(0))
        a = self.attention(hidden, outputs)
        weighted = torch.bmm(a.unsqueeze(1), outputs.permute(1, 0, 2)).permute(1, 0, 2)
        out, h = self.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        pred = self.fc_out(torch.cat((out.squeeze(0), weighted.squeeze(0), embedded.squeeze(0)), dim=1))
        return pred, h.squeeze(0), a


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder


def build(config):
    H = config["hidden_size"]
    h = config.get("encoder_hidden_size") or H
    E = config["embedding_size"]
    Et = config.get("tgt_embedding_size") or E
    return Seq2Seq(Encoder(config["src_vocab_size"], E, h, H), Decoder(config["tgt_vocab_size"], Et, h, H))
