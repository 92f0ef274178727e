"""tutorial.py with the attention's parameters called W1, W2 and V, as in
a user's own variant: its checkpoint exports with --map
decoder.attention.W1=decoder.attention.Wa (and W2=Ua, V=Va), and `attnx
verify --torch-module` loads these modules from the names before --map."""

import torch.nn as nn

import tutorial


class Attention(tutorial.BahdanauAttention):
    def __init__(self, hidden_size):
        nn.Module.__init__(self)
        self.W1 = nn.Linear(hidden_size, hidden_size)
        self.W2 = nn.Linear(hidden_size, hidden_size)
        self.V = nn.Linear(hidden_size, 1)

    @property
    def Wa(self):
        return self.W1

    @property
    def Ua(self):
        return self.W2

    @property
    def Va(self):
        return self.V


def build(config):
    encoder, decoder = tutorial.build(config)
    decoder.attention = Attention(config["hidden"])
    return encoder, decoder
