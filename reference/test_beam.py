"""Tests of the reference's beam search (spec: Beam search): hand-worked
log_prob tables with known answers, tie-breaking, EOS at rank >= K, the
length penalty, float32 scores, a literal second implementation of the spec
on random tables full of ties, K = 1 against greedy decoding, and a batch of
rows against each row alone, for every architecture and cell.

Run: /usr/bin/python3 -m unittest reference/test_beam.py
"""

import os
import sys
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnx_reference as ref  # noqa: E402
from test_reference import CONFIGS, model_for  # noqa: E402

torch.set_num_threads(1)

SOS, EOS, V = 0, 1, 4
X = -8.0  # "never": far below every other entry of the tables


def table_step(tables, K, max_len):
    """A decoder stand-in for beam_search_steps: the log_probs of a slot are
    tables[row](prefix), prefix being the tokens fed after SOS so far. The
    state is the input history per slot, reordered like a real state.
    Returns (step, initial state)."""
    def step(inp, state):
        hist = state[0].clone()
        rows = []
        for slot in range(inp.shape[0]):
            row = hist[0, slot]
            pos = int((row >= 0).sum())
            row[pos] = inp[slot]
            rows.append(tables[slot // K](tuple(row[1:pos + 1].tolist())))
        return torch.tensor(rows, dtype=torch.float32), (hist,)
    B = len(tables)
    return step, (torch.full((1, B * K, max_len + 1), -1, dtype=torch.int64),)


def dict_table(entries):
    return lambda prefix: entries.get(prefix, [X] * V)


def beam_table(tables, K, max_len, alpha=1.0):
    step, state = table_step(tables, K, max_len)
    return ref.beam_search_steps(step, state, len(tables), K, max_len, SOS, EOS, alpha)


def summary(hyps):
    return [(h.tokens, h.score, h.normalized) for h in hyps]


# Worked by hand (all values dyadic, so every float32 sum is exact):
# step 1: [2] -0.5, [3] -1 live; EOS at rank 2 (>= K) skipped.
# step 2: [2,EOS] -0.75 finishes (rank 0); [3,2] -1.5, [2,2] -2.5 live.
# step 3: [3,2,EOS] -2 finishes (rank 0); [2,2,EOS] -2.625 is at rank 2 and
#         does not finish; two finished = K: stop.
T1 = dict_table({
    (): [X, -4, -0.5, -1],
    (2,): [X, -0.25, -2, -4],
    (3,): [X, -3, -0.5, -2],
    (3, 2): [X, -0.5, -1, -2],
    (2, 2): [X, -0.125, -4, -4],
})

# step 1: [2] -0.5, [3] -0.625; step 2: [3,2] -0.875 live, [2,EOS] -1 finishes
# at rank 1, [2,0] -8.5 live; step 3: [3,2,EOS] -1.25 finishes.
T2 = dict_table({
    (): [X, X, -0.5, -0.625],
    (2,): [X, -0.5, X, X],
    (3,): [X, X, -0.25, X],
    (3, 2): [X, -0.375, X, X],
})

# Ties everywhere: step 1 v2 and v3 tie (v ascending); step 2 all four
# candidates tie (i ascending, then v ascending).
T3 = dict_table({
    (): [X, X, -1, -1],
    (2,): [X, X, -0.5, -0.5],
    (3,): [X, X, -0.5, -0.5],
})


class Tables(unittest.TestCase):
    def test_known_answer_and_eos_rank(self):
        got = beam_table([T1], 2, 10)[0]
        self.assertEqual(summary(got), [([2, 1], -0.75, -0.375), ([3, 2, 1], -2.0, float(np.float32(-2.0 / 3)))])
        # [2, 2, EOS] scored -2.625 at rank 2 >= K: never finished.
        self.assertNotIn([2, 2, 1], [h.tokens for h in got])

    def test_eos_at_rank_k_or_more_in_first_step(self):
        # K = 3: EOS is at rank 2 < K in step 1 and finishes at once; the
        # walk goes on to rank 3 for the third live hypothesis.
        got = beam_table([T1], 3, 1, alpha=0.0)[0]
        self.assertEqual(summary(got), [([2], -0.5, -0.5), ([3], -1.0, -1.0), ([1], -4.0, -4.0), ([0], X, X)])
        # K = 2: it is at rank 2 = K and does not.
        got = beam_table([T1], 2, 1, alpha=0.0)[0]
        self.assertEqual([h.tokens for h in got], [[2], [3]])

    def test_fill_with_live_at_max_len(self):
        got = beam_table([T1], 2, 2, alpha=0.0)[0]
        self.assertEqual(summary(got), [([2, 1], -0.75, -0.75), ([3, 2], -1.5, -1.5), ([2, 2], -2.5, -2.5)])

    def test_length_penalty(self):
        self.assertEqual([h.tokens for h in beam_table([T2], 2, 10, alpha=0.0)[0]], [[2, 1], [3, 2, 1]])
        got = beam_table([T2], 2, 10, alpha=1.0)[0]
        self.assertEqual([h.tokens for h in got], [[3, 2, 1], [2, 1]])
        self.assertEqual([h.score for h in got], [-1.25, -1.0])
        self.assertEqual([h.normalized for h in got], [float(np.float32(-1.25 / 3)), -0.5])
        # alpha 0.5: -1/sqrt(2) = -0.7071 beats -1.25/sqrt(3) = -0.7217.
        got = beam_table([T2], 2, 10, alpha=0.5)[0]
        self.assertEqual([h.tokens for h in got], [[2, 1], [3, 2, 1]])
        self.assertEqual([h.normalized for h in got], [float(np.float32(-1 / 2 ** 0.5)),
                                                       float(np.float32(-1.25 / 3 ** 0.5))])

    def test_ties(self):
        got = beam_table([T3], 2, 2)[0]
        # Equal final scores keep insertion order: [2,2] before [2,3].
        self.assertEqual([h.tokens for h in got], [[2, 2], [2, 3]])
        self.assertEqual([h.score for h in got], [-1.5, -1.5])

    def test_rows_have_their_own_beams(self):
        batch = beam_table([T1, T2, T3], 2, 10)
        for b, t in enumerate((T1, T2, T3)):
            self.assertEqual(summary(batch[b]), summary(beam_table([t], 2, 10)[0]), b)

    def test_scores_are_float32_sums_in_step_order(self):
        vals = [-0.1, -0.7, -1.3, -2.9]
        t = lambda prefix: [vals[(len(prefix) + j) % 4] for j in range(V)]  # noqa: E731
        differ = 0
        for h in beam_table([t], 3, 6, alpha=0.0)[0]:
            s = np.float32(0)
            for pos, tok in enumerate(h.tokens):
                s = np.float32(s + np.float32(t(tuple(h.tokens[:pos]))[tok]))
            self.assertEqual(h.score, float(s), h.tokens)
            differ += h.score != sum(t(tuple(h.tokens[:p]))[k] for p, k in enumerate(h.tokens))
        self.assertGreater(differ, 0, "float64 sums should differ somewhere for this test to mean something")

    def test_bad_arguments(self):
        for kw, want in (({"beam": 0}, "beam 0"), ({"max_len": 0}, "max_len 0"),
                         ({"alpha": -1.0}, "length penalty"), ({"alpha": float("nan")}, "length penalty")):
            args = {"beam": 2, "max_len": 3, "alpha": 1.0}
            args.update(kw)
            step, state = table_step([T1], args["beam"] if args["beam"] > 0 else 1, 3)
            with self.assertRaises(ref.ReferenceError) as cm:
                ref.beam_search_steps(step, state, 1, args["beam"], args["max_len"], SOS, EOS, args["alpha"])
            self.assertIn(want, str(cm.exception))


def spec_beam(lp_of, K, max_len, alpha):
    """The spec's pseudocode, literally: every candidate sorted, float32 sums."""
    live, finished = [([], np.float32(0))], []
    for _ in range(max_len):
        cands = []
        for i, (toks, s) in enumerate(live):
            lp = lp_of(tuple(toks))
            cands += [(np.float32(s + np.float32(lp[v])), i, v) for v in range(len(lp))]
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))
        new = []
        for r, (s, i, v) in enumerate(cands):
            if v == EOS:
                if r < K:
                    finished.append((live[i][0] + [EOS], s))
                continue
            new.append((live[i][0] + [v], s))
            if len(new) == K:
                break
        live = new
        if len(finished) >= K:
            break
    if len(finished) < K:
        finished += live
    out = [(t, float(s), float(np.float32(float(s) / len(t) ** alpha))) for t, s in finished]
    return sorted(out, key=lambda h: -h[2])


class AgainstSpecTranscription(unittest.TestCase):
    def test_random_tables_with_ties(self):
        """Random tables over 6 tokens whose entries come from 3 values, so
        ties are everywhere; the optimised walk (top candidates only) must
        agree exactly with the literal transcription."""
        levels = [-0.5, -1.0, -2.0]
        n = 0
        for seed in range(60):
            def lp_of(prefix, seed=seed):
                g = torch.Generator().manual_seed(hash((seed,) + prefix) & 0x7FFFFFFF)
                return [levels[int(i)] for i in torch.randint(0, 3, (6,), generator=g)]
            K = 1 + seed % 4
            alpha = (0.0, 0.6, 1.0)[seed % 3]
            got = beam_table([lp_of], K, 5, alpha)[0]
            want = spec_beam(lp_of, K, 5, alpha)
            self.assertEqual(summary(got), want, "seed %d K %d" % (seed, K))
            n += len(want)
        self.assertGreater(n, 60)


class Models(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(9)
        self.lengths = torch.tensor([5, 2, 7, 1])
        self.src = torch.randint(4, 17, (4, 7), generator=g)
        for i, n in enumerate(self.lengths.tolist()):
            self.src[i, n:] = ref.PAD_ID

    def test_k1_is_greedy(self):
        for arch, cell in CONFIGS:
            for L in (1, 2):
                with self.subTest(arch=arch, cell=cell, L=L):
                    model = model_for(arch, cell, 9, L, 17, 13, seed=21 + L)
                    toks, lens = ref.greedy_decode(model, self.src, self.lengths, max_len=8)
                    beams = ref.beam_search(model, self.src, self.lengths, 1, 8)
                    for i, hyps in enumerate(beams):
                        self.assertEqual(len(hyps), 1)
                        self.assertEqual(hyps[0].tokens, toks[i, :lens[i]].tolist(), "row %d" % i)

    def test_batch_equals_rows_alone(self):
        stats = {"rows": 0, "stopped": 0}
        for arch, cell in CONFIGS:
            with self.subTest(arch=arch, cell=cell):
                model = model_for(arch, cell, 9, 2, 17, 13, seed=5)
                for K in (2, 4):
                    batch = ref.beam_search(model, self.src, self.lengths, K, 8, alpha=0.8)
                    for i, n in enumerate(self.lengths.tolist()):
                        alone = ref.beam_search(model, self.src[i:i + 1, :n], self.lengths[i:i + 1], K, 8,
                                                alpha=0.8)[0]
                        self.assertEqual([h.tokens for h in batch[i]], [h.tokens for h in alone], (K, i))
                        for a, b in zip(batch[i], alone):
                            self.assertAlmostEqual(a.score, b.score, delta=1e-5)
                        stats["rows"] += 1
                        stats["stopped"] += any(h.tokens[-1] == ref.EOS_ID for h in alone)
        self.assertGreater(stats["stopped"], 0)

    def test_scores_match_teacher_forced_log_probs(self):
        for arch, cell in CONFIGS:
            with self.subTest(arch=arch, cell=cell):
                model = model_for(arch, cell, 9, 1, 17, 13, seed=8)
                hyps = ref.beam_search(model, self.src[:1], self.lengths[:1], 3, 6, alpha=0.0)[0]
                self.assertGreaterEqual(len(hyps), 3)
                prev = float("inf")
                for h in hyps:
                    T = len(h.tokens)
                    forced = torch.tensor([ref.SOS_ID] + h.tokens[:-1]).unsqueeze(1)
                    out = ref.run_steps(model, self.src[:1], self.lengths[:1], T, step_input_ids=forced)
                    s = np.float32(0)
                    for t, tok in enumerate(h.tokens):
                        s = np.float32(s + out["log_probs"][t, 0, tok].numpy())
                    self.assertAlmostEqual(h.score, float(s), delta=1e-5)
                    self.assertLessEqual(h.normalized, prev)
                    prev = h.normalized


if __name__ == "__main__":
    unittest.main()
