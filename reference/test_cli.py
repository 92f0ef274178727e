"""Tests of the reference.py CLI. Run: make reference-test"""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnx_reference as ref  # noqa: E402
import toolkits  # noqa: E402
import reference as cli  # noqa: E402


def call(*argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = cli.main(list(argv))
    return rc, err.getvalue()


class CLI(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def p(self, name):
        return os.path.join(self.d, name)

    def test_make_run_roundtrip(self):
        for fmt in ("pt", "safetensors"):
            with self.subTest(fmt=fmt):
                ck = self.p("m." + fmt)
                self.assertEqual(call("make-model", "--arch", "luong-concat", "--hidden", "6", "--layers", "2",
                                      "--src-vocab", "9", "--tgt-vocab", "11", "--seed", "3", "--out", ck,
                                      "--format", fmt)[0], 0)
                self.assertEqual(call("random-inputs", "--batch", "3", "--src-len", "5", "--src-vocab", "9",
                                      "--seed", "1", "--ragged", "--out", self.p("in.safetensors"))[0], 0)
                inp, _ = ref.read_safetensors(self.p("in.safetensors"))
                lengths = inp["source_lengths"]
                self.assertEqual(int(lengths.max()), 5)
                self.assertTrue(bool((lengths >= 1).all()))
                for i, n in enumerate(lengths.tolist()):
                    self.assertTrue(bool((inp["source_ids"][i, :n] >= 4).all()))
                    self.assertTrue(bool((inp["source_ids"][i, n:] == 0).all()))
                rc, err = call("run", "--checkpoint", ck, "--inputs", self.p("in.safetensors"), "--steps", "4",
                               "--out", self.p("out.safetensors"), "--max-len", "6")
                self.assertEqual(rc, 0, err)
                out, _ = ref.read_safetensors(self.p("out.safetensors"))
                shapes = {k: list(v.shape) for k, v in out.items()}
                self.assertEqual(shapes, {
                    "encoder_outputs": [3, 5, 6], "hidden": [2, 3, 6], "cell": [2, 3, 6],
                    "step_input_ids": [4, 3], "log_probs": [4, 3, 11], "next_hidden": [4, 2, 3, 6],
                    "next_cell": [4, 2, 3, 6], "attention": [4, 3, 5], "tokens": [4, 3],
                    "greedy_tokens": [3, 6], "greedy_lengths": [3]})
                self.assertTrue(torch.equal(out["step_input_ids"][0], torch.ones(3, dtype=torch.int64)))
                self.assertTrue(torch.equal(out["step_input_ids"][1:], out["tokens"][:-1]))
                self.assertTrue(torch.equal(out["tokens"], out["log_probs"].argmax(-1)))
                self.assertTrue(torch.equal(out["next_hidden"][-1][-1], out["next_hidden"][-1][1]))
                self.assertEqual(out["log_probs"].dtype, torch.float32)

    def test_teacher_forcing(self):
        ck = self.p("m.pt")
        call("make-model", "--arch", "bahdanau", "--hidden", "5", "--src-vocab", "8", "--tgt-vocab", "9",
             "--out", ck)
        forced = torch.tensor([[1, 1], [5, 6], [7, 2]])
        ref.write_safetensors(self.p("in.safetensors"), {
            "source_ids": torch.tensor([[4, 5, 6], [7, 0, 0]]), "source_lengths": torch.tensor([3, 1]),
            "step_input_ids": forced})
        rc, err = call("run", "--checkpoint", ck, "--inputs", self.p("in.safetensors"), "--steps", "3",
                       "--out", self.p("out.safetensors"))
        self.assertEqual(rc, 0, err)
        out, _ = ref.read_safetensors(self.p("out.safetensors"))
        self.assertTrue(torch.equal(out["step_input_ids"], forced))
        self.assertTrue(bool((out["attention"][:, 1, 1:] == 0).all()))

    def test_user_errors_exit_2_without_traceback(self):
        ck = self.p("m.pt")
        call("make-model", "--arch", "luong-dot", "--hidden", "4", "--src-vocab", "6", "--tgt-vocab", "7",
             "--out", ck)
        ref.write_safetensors(self.p("bad_len.safetensors"), {
            "source_ids": torch.tensor([[4, 5]]), "source_lengths": torch.tensor([3])})
        ref.write_safetensors(self.p("bad_id.safetensors"), {
            "source_ids": torch.tensor([[4, 9]]), "source_lengths": torch.tensor([2])})
        with open(self.p("junk.pt"), "wb") as f:
            f.write(b"not a checkpoint at all")
        cases = [
            (("run", "--checkpoint", self.p("none.pt"), "--inputs", "x", "--steps", "1", "--out", "y"),
             "does not exist"),
            (("run", "--checkpoint", self.p("junk.pt"), "--inputs", "x", "--steps", "1", "--out", "y"),
             "junk.pt"),
            (("run", "--checkpoint", ck, "--inputs", self.p("bad_len.safetensors"), "--steps", "1",
              "--out", self.p("o")), "source_lengths[0] = 3"),
            (("run", "--checkpoint", ck, "--inputs", self.p("bad_id.safetensors"), "--steps", "1",
              "--out", self.p("o")), "source vocabulary"),
            (("make-model", "--arch", "transformer", "--hidden", "3", "--src-vocab", "3", "--tgt-vocab", "3",
              "--out", self.p("z")), "invalid choice"),
            (("random-inputs", "--batch", "0", "--src-len", "3", "--src-vocab", "5", "--out", self.p("z")),
             ">= 1"),
            ((), "missing subcommand"),
        ]
        for argv, want in cases:
            with self.subTest(argv=argv):
                rc, err = call(*argv)
                self.assertEqual(rc, 2)
                self.assertTrue(err.startswith("reference: "), err)
                self.assertIn(want, err)
                self.assertNotIn("Traceback", err)

    def test_gru_and_tutorial_models(self):
        """make-model's --cell, --embedding-size and --max-length; run writes
        no cell tensors for GRU models."""
        for argv, cfg in (
            (("--arch", "bahdanau", "--cell", "gru", "--embedding-size", "4"),
             {"arch": "bahdanau", "cell": "gru", "embedding_size": 4}),
            (("--arch", "tutorial-location", "--max-length", "6"),
             {"arch": "tutorial-location", "cell": "gru", "max_length": 6}),
            (("--arch", "tutorial-bahdanau",), {"arch": "tutorial-bahdanau", "cell": "gru", "embedding_size": 6}),
        ):
            with self.subTest(argv=argv):
                ck = self.p("m.safetensors")
                rc, err = call("make-model", "--hidden", "6", "--layers", "2", "--src-vocab", "9", "--tgt-vocab", "11",
                               "--out", ck, *argv)
                self.assertEqual(rc, 0, err)
                got = toolkits.load_model(ck).config
                for k, v in cfg.items():
                    self.assertEqual(got[k], v, k)
                call("random-inputs", "--batch", "3", "--src-len", "5", "--src-vocab", "9", "--seed", "2",
                     "--ragged", "--out", self.p("in.safetensors"))
                rc, err = call("run", "--checkpoint", ck, "--inputs", self.p("in.safetensors"), "--steps", "3",
                               "--out", self.p("out.safetensors"))
                self.assertEqual(rc, 0, err)
                out, _ = ref.read_safetensors(self.p("out.safetensors"))
                self.assertEqual(sorted(out), ["attention", "encoder_outputs", "greedy_lengths", "greedy_tokens",
                                               "hidden", "log_probs", "next_hidden", "step_input_ids", "tokens"])
                self.assertEqual(list(out["next_hidden"].shape), [3, 2, 3, 6])
        rc, err = call("make-model", "--arch", "luong-dot", "--hidden", "3", "--src-vocab", "5", "--tgt-vocab", "5",
                       "--max-length", "4", "--out", self.p("z"))
        self.assertEqual(rc, 2)
        self.assertIn("--max-length is for tutorial-location only", err)
        rc, err = call("make-model", "--arch", "tutorial-bahdanau", "--cell", "lstm", "--hidden", "3",
                       "--src-vocab", "5", "--tgt-vocab", "5", "--out", self.p("z"))
        self.assertEqual(rc, 2)
        self.assertIn("GRU only", err)

    def test_batch(self):
        """batch runs its jobs in order in one process, the same as one call
        each; the first failing job stops it, named."""
        ck, inp = self.p("m.pt"), self.p("in.safetensors")
        jobs = [
            ["make-model", "--arch", "luong-general", "--cell", "gru", "--hidden", "5", "--src-vocab", "9",
             "--tgt-vocab", "7", "--seed", "4", "--out", ck],
            ["random-inputs", "--batch", "2", "--src-len", "4", "--src-vocab", "9", "--seed", "4", "--ragged",
             "--out", inp],
            ["run", "--checkpoint", ck, "--inputs", inp, "--steps", "3", "--out", self.p("a.safetensors")],
        ]
        with open(self.p("jobs.json"), "w") as f:
            json.dump(jobs, f)
        rc, err = call("batch", self.p("jobs.json"))
        self.assertEqual(rc, 0, err)
        rc, err = call("run", "--checkpoint", ck, "--inputs", inp, "--steps", "3", "--out", self.p("b.safetensors"))
        self.assertEqual(rc, 0, err)
        a, _ = ref.read_safetensors(self.p("a.safetensors"))
        b, _ = ref.read_safetensors(self.p("b.safetensors"))
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        for body, want in (
            ([["run", "--checkpoint", self.p("none.pt"), "--inputs", inp, "--steps", "1", "--out", self.p("c")]],
             "batch job 0 (run): checkpoint %s does not exist" % self.p("none.pt")),
            ([["make-model", "--arch", "nope"]], "batch job 0 (make-model): argument --arch: invalid choice"),
            ([["batch", "x"]], "job 0 is a batch itself"),
            ({"jobs": 1}, "want a JSON array of non-empty lists of strings"),
        ):
            with self.subTest(want=want):
                with open(self.p("bad.json"), "w") as f:
                    json.dump(body, f)
                rc, err = call("batch", self.p("bad.json"))
                self.assertEqual(rc, 2)
                self.assertIn(want, err)

    def test_beam(self):
        ck = self.p("m.pt")
        call("make-model", "--arch", "luong-general", "--cell", "gru", "--hidden", "7", "--src-vocab", "9",
             "--tgt-vocab", "12", "--seed", "5", "--out", ck)
        call("random-inputs", "--batch", "3", "--src-len", "6", "--src-vocab", "9", "--seed", "4", "--ragged",
             "--out", self.p("in.safetensors"))
        rc, err = call("beam", "--checkpoint", ck, "--inputs", self.p("in.safetensors"), "--beam", "4",
                       "--n-best", "3", "--max-len", "7", "--length-penalty", "0.7", "--out", self.p("b.safetensors"))
        self.assertEqual(rc, 0, err)
        out, _ = ref.read_safetensors(self.p("b.safetensors"))
        self.assertEqual({k: list(v.shape) for k, v in out.items()}, {
            "beam_tokens": [3, 3, 7], "beam_lengths": [3, 3], "beam_scores": [3, 3],
            "beam_normalized_scores": [3, 3], "beam_counts": [3]})
        self.assertEqual(out["beam_counts"].tolist(), [3, 3, 3])
        self.assertEqual(out["beam_scores"].dtype, torch.float32)
        model = toolkits.load_model(ck)
        inp, _ = ref.read_safetensors(self.p("in.safetensors"))
        want = ref.beam_search(model, inp["source_ids"], inp["source_lengths"], 4, 7, alpha=0.7)
        for b, hyps in enumerate(want):
            for j, h in enumerate(hyps[:3]):
                n = int(out["beam_lengths"][b, j])
                self.assertEqual(out["beam_tokens"][b, j, :n].tolist(), h.tokens)
                self.assertTrue(bool((out["beam_tokens"][b, j, n:] == ref.PAD_ID).all()))
                self.assertEqual(float(out["beam_scores"][b, j]), h.score)
                self.assertEqual(float(out["beam_normalized_scores"][b, j]), h.normalized)
            norm = out["beam_normalized_scores"][b].tolist()
            self.assertEqual(norm, sorted(norm, reverse=True))
        for argv, want in ((("--beam", "0", "--max-len", "3"), "--beam 0, want >= 1"),
                           (("--beam", "2", "--n-best", "3", "--max-len", "3"), "--n-best 3, want 1 <= N <= beam 2"),
                           (("--beam", "2", "--max-len", "0"), "--max-len 0, want >= 1"),
                           (("--beam", "2", "--max-len", "3", "--length-penalty", "-1"), "length penalty")):
            with self.subTest(argv=argv):
                rc, err = call("beam", "--checkpoint", ck, "--inputs", self.p("in.safetensors"),
                               "--out", self.p("x"), *argv)
                self.assertEqual(rc, 2)
                self.assertIn(want, err)

    def test_export_onnx_report(self):
        """torch.onnx.export of both cells: the ONNX interface's names, with no
        cell input or output for a GRU model."""
        for argv, cell in ((("--arch", "luong-general", "--layers", "2"), ["cell"]),
                           (("--arch", "tutorial-bahdanau"), [])):
            with self.subTest(argv=argv):
                ck = self.p("m.pt")
                call("make-model", "--hidden", "4", "--src-vocab", "6", "--tgt-vocab", "7", "--out", ck, *argv)
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    rc, err = call("export-onnx", "--checkpoint", ck, "--out-dir", self.p("onnx"))
                self.assertEqual(rc, 0, err)
                with open(self.p("onnx/torch_export.json")) as f:
                    rep = json.load(f)
                self.assertGreater(rep["encoder"]["nodes"], 0)
                self.assertGreater(rep["decoder"]["nodes"], 0)
                self.assertEqual([v["name"] for v in rep["encoder"]["inputs"]], ["source_ids", "source_lengths"])
                self.assertEqual([v["name"] for v in rep["encoder"]["outputs"]], ["encoder_outputs", "hidden"] + cell)
                self.assertEqual([v["name"] for v in rep["decoder"]["inputs"]],
                                 ["input_ids", "hidden"] + cell + ["encoder_outputs", "source_lengths"])
                self.assertEqual([v["name"] for v in rep["decoder"]["outputs"]],
                                 ["log_probs", "next_hidden"] + ["next_" + c for c in cell] + ["attention"])


if __name__ == "__main__":
    unittest.main()
