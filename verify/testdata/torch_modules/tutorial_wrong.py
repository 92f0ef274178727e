"""tutorial.py with a mistake attnx must catch: the attention's query is
the embedding of the input token instead of the decoder's hidden state.
The keys are the same, so the weights load; the outputs differ."""

import torch

import tutorial


class Decoder(tutorial.AttnDecoderRNN):
    def forward_step(self, token, hidden, encoder_outputs):
        embedded = self.embedding(token)
        context, weights = self.attention(embedded, encoder_outputs)
        output, hidden = self.gru(torch.cat((embedded, context), dim=2), hidden)
        return self.out(output), hidden, weights


def build(config):
    encoder, _ = tutorial.build(config)
    return encoder, Decoder(config["hidden"], config["tgt_vocab"])
