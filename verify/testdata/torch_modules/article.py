"""The article's own modules as `attnx verify --torch-module` takes them.

The classes are the literal transcription of the article kept by the
reference's tests (reference/test_reference.py: EncoderLSTM,
BahdanauDecoder, LuongDecoder with Attention), imported rather than copied.
They are LSTM only; the Bahdanau decoder has one layer and the embedding
size is H.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reference"))

import test_reference as article  # noqa: E402


def build(config):
    H, arch = config["hidden"], config["arch"]
    encoder = article.ArticleEncoderLSTM(config["src_vocab"], H, config["layers"])
    if arch == "bahdanau":
        decoder = article.ArticleBahdanauDecoder(H, config["tgt_vocab"])
    else:
        decoder = article.ArticleLuongDecoder(H, config["tgt_vocab"], article.ArticleAttention(H, arch.split("-")[1]))
    return encoder, decoder
