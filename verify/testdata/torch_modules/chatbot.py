"""A chatbot tutorial model written for attnx's tests (not the tutorial's
code) with the tutorial's call conventions and key names: an encoder and a
decoder sharing one embedding; enc(input_seq [S, 1], lengths) -> (outputs
summed over the directions, hidden); dec(input_step [1, 1], hidden,
outputs) -> (softmax output, hidden), attention in dec.attn, logits in
dec.out."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, H, embedding, layers):
        super().__init__()
        self.H = H
        self.embedding = embedding
        self.gru = nn.GRU(H, H, layers, bidirectional=True)

    def forward(self, input_seq, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(input_seq), lengths)
        out, hidden = self.gru(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out)
        return out[:, :, :self.H] + out[:, :, self.H:], hidden


class Attn(nn.Module):
    def __init__(self, method, H):
        super().__init__()
        self.method = method
        if method == "general":
            self.attn = nn.Linear(H, H)
        elif method == "concat":
            self.attn = nn.Linear(2 * H, H)
            self.v = nn.Parameter(torch.zeros(H))

    def forward(self, hidden, outputs):
        if self.method == "dot":
            e = torch.sum(hidden * outputs, dim=2)
        elif self.method == "general":
            e = torch.sum(hidden * self.attn(outputs), dim=2)
        else:
            e = torch.sum(self.v * self.attn(torch.cat((hidden.expand(outputs.size(0), -1, -1), outputs), 2)).tanh(), dim=2)
        return F.softmax(e.t(), dim=1).unsqueeze(1)


class Decoder(nn.Module):
    def __init__(self, method, embedding, H, vocab, layers):
        super().__init__()
        self.embedding = embedding
        self.gru = nn.GRU(H, H, layers)
        self.concat = nn.Linear(2 * H, H)
        self.out = nn.Linear(H, vocab)
        self.attn = Attn(method, H)

    def forward(self, input_step, last_hidden, outputs):
        rnn_output, hidden = self.gru(self.embedding(input_step), last_hidden)
        weights = self.attn(rnn_output, outputs)
        context = weights.bmm(outputs.transpose(0, 1)).squeeze(1)
        co = torch.tanh(self.concat(torch.cat((rnn_output.squeeze(0), context), 1)))
        return F.softmax(self.out(co), dim=1), hidden


def build(config):
    H = config["hidden_size"]
    emb = nn.Embedding(config["src_vocab_size"], H)
    enc = Encoder(H, emb, config.get("encoder_layers") or config["num_layers"])
    dec = Decoder(config["arch"].split("-", 1)[1], emb, H, config["tgt_vocab_size"], config["num_layers"])
    return enc, dec
