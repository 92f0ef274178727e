"""PyTorch's seq2seq translation tutorial, current version, as `attnx
verify --torch-module` takes it: the encoder runs over the whole sentence
(batch first); the decoder's forward_step is one step of additive
attention with biases (Wa on the query, Ua on the encoder outputs, Va to a
score), a GRU over [embedding; context] and the output layer. Written for
attnx's tests from the tutorial's description; the names of the
attributes are the tutorial's, so its checkpoints load as they are.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class EncoderRNN(nn.Module):
    def __init__(self, vocab_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, ids):
        return self.gru(self.dropout(self.embedding(ids)))


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def score(self, query, keys):
        """query [B, 1, H], keys [B, S, H] -> scores [B, 1, S]."""
        return self.Va(torch.tanh(self.Wa(query) + self.Ua(keys))).transpose(1, 2)

    def forward(self, query, keys):
        weights = F.softmax(self.score(query, keys), dim=-1)
        return torch.bmm(weights, keys), weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, vocab_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward_step(self, token, hidden, encoder_outputs):
        """token [B, 1], hidden [1, B, H] -> raw outputs [B, 1, V], hidden, weights [B, 1, S]."""
        embedded = self.dropout(self.embedding(token))
        context, weights = self.attention(hidden.permute(1, 0, 2), encoder_outputs)
        output, hidden = self.gru(torch.cat((embedded, context), dim=2), hidden)
        return self.out(output), hidden, weights


def build(config):
    return EncoderRNN(config["src_vocab"], config["hidden"]), AttnDecoderRNN(config["hidden"], config["tgt_vocab"])
