"""Tests of the toolkit reference (toolkits.py): a ragged batch decodes each
row as it decodes alone (packing and masking), every state has the batch on
axis 1 as decoder.onnx's do, the key-name eras of bentrevett's tutorial load
into one model, and the OpenNMT-py bridge and JoeyNMT init conventions
compute what docs/toolkits.md says.

    /usr/bin/python3 -m unittest reference/test_toolkits.py
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import toolkits  # noqa: E402

CONFIGS = [
    {"arch": "onmt-general", "cell": "lstm", "hidden_size": 8, "embedding_size": 5, "num_layers": 2, "src_vocab_size": 11,
     "tgt_vocab_size": 9, "bidirectional": True, "encoder_hidden_size": 4, "input_feed": True, "bridge": "relu-linear"},
    {"arch": "onmt-mlp", "cell": "gru", "hidden_size": 6, "embedding_size": 5, "num_layers": 1, "src_vocab_size": 11,
     "tgt_vocab_size": 9, "bidirectional": True, "encoder_hidden_size": 3},
    {"arch": "joey-bahdanau", "cell": "lstm", "hidden_size": 7, "embedding_size": 5, "num_layers": 2, "encoder_layers": 1,
     "src_vocab_size": 11, "tgt_vocab_size": 9, "bidirectional": True, "encoder_hidden_size": 3, "input_feed": True, "bridge": "bridge"},
    {"arch": "bentrevett", "cell": "gru", "hidden_size": 7, "embedding_size": 5, "tgt_embedding_size": 4, "num_layers": 1,
     "src_vocab_size": 11, "tgt_vocab_size": 9, "bidirectional": True, "encoder_hidden_size": 3},
    {"arch": "chatbot-concat", "cell": "gru", "hidden_size": 6, "embedding_size": 6, "num_layers": 2, "src_vocab_size": 11,
     "tgt_vocab_size": 11, "bidirectional": True},
]


def model(cfg, seed=1):
    return toolkits.randomize(toolkits.build(cfg), seed, 0.5).eval()


class RaggedRowsDecodeAsAlone(unittest.TestCase):
    @torch.no_grad()
    def test_every_architecture(self):
        g = torch.Generator().manual_seed(3)
        for cfg in CONFIGS:
            with self.subTest(arch=cfg["arch"]):
                m = model(cfg)
                ids = torch.randint(0, cfg["src_vocab_size"], (3, 6), generator=g)
                lens = torch.tensor([6, 2, 4])
                enc, state = m.encode(ids, lens)
                self.assertEqual(len(state), len(m.state_names))
                for st in state:
                    self.assertEqual(st.shape[1], 3, "the batch is axis 1 of every state")
                inp = torch.tensor([2, 2, 2])
                lp, nxt, att = m.step(inp, state, enc, lens)
                for r in range(3):
                    n = int(lens[r])
                    e1, s1 = m.encode(ids[r:r + 1, :n], lens[r:r + 1])
                    lp1, _, att1 = m.step(inp[r:r + 1], s1, e1, lens[r:r + 1])
                    torch.testing.assert_close(lp[r:r + 1], lp1, rtol=1e-5, atol=1e-5)
                    torch.testing.assert_close(att[r, :n], att1[0], rtol=1e-5, atol=1e-6)
                    self.assertTrue(bool((att[r, n:] == 0).all()), "no attention past a row's length")


class Conventions(unittest.TestCase):
    @torch.no_grad()
    def test_onmt_directions_per_layer(self):
        cfg = dict(CONFIGS[0], bridge="")
        m = model(cfg)
        ids, lens = torch.tensor([[1, 2, 3]]), torch.tensor([3])
        emb = m.encoder.embeddings.make_embedding.emb_luts[0](ids)
        _, (h, _) = m.encoder.rnn(emb)
        _, state = m.encode(ids, lens)
        # layer 1's [forward; backward]
        torch.testing.assert_close(state[0][1, 0], torch.cat([h[2, 0], h[3, 0]]))

    @torch.no_grad()
    def test_chatbot_first_entries(self):
        m = model(dict(CONFIGS[4], num_layers=1, encoder_layers=2))
        ids, lens = torch.tensor([[1, 2, 3]]), torch.tensor([3])
        _, h = m.encoder.gru(m.embedding(ids.t()))
        _, state = m.encode(ids, lens)
        # encoder_hidden[:1]: layer 0's forward state, not the top layer's
        torch.testing.assert_close(state[0][0], h[0])

    def test_bentrevett_eras(self):
        m = model(CONFIGS[3])
        sd = m.state_dict()
        old = dict(sd)
        old["decoder.attention.v"] = old.pop("decoder.attention.v.weight")[0]
        old["decoder.out.weight"] = old.pop("decoder.fc_out.weight")
        old["decoder.out.bias"] = old.pop("decoder.fc_out.bias")
        cfg = toolkits.bentrevett_config(old)
        self.assertEqual((cfg["hidden_size"], cfg["encoder_hidden_size"], cfg["tgt_embedding_size"]), (7, 3, 4))
        again = toolkits.load(cfg, old)
        for k, v in again.state_dict().items():
            torch.testing.assert_close(v, sd[k])

    def test_load_names_missing_keys(self):
        m = model(CONFIGS[1])
        sd = m.state_dict()
        del sd["generator.bias"]
        with self.assertRaisesRegex(toolkits.ToolkitError, "missing \\['generator.bias'\\]"):
            toolkits.load(CONFIGS[1], sd)


if __name__ == "__main__":
    unittest.main()
