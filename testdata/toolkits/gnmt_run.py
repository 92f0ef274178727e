"""Runs one of GNMT's own scripts (train.py, translate.py) from a checkout
of NVIDIA DeepLearningExamples' PyTorch/Translation/GNMT or of mlcommons
training's GNMT reference, with gnmt_standins.py's modules installed:

    /usr/bin/python3 gnmt_run.py dle|mlperf REPO_DIR SCRIPT [ARGS...]

The script runs as __main__ with REPO_DIR first on sys.path, so that its
seq2seq package is the repository's own."""
import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gnmt_standins  # noqa: E402

if len(sys.argv) < 4:
    sys.exit("usage: gnmt_run.py dle|mlperf REPO_DIR SCRIPT [ARGS...]")
kind, repo, script = sys.argv[1:4]
gnmt_standins.install(kind)
repo = os.path.abspath(repo)
sys.path.insert(0, repo)
sys.argv = [os.path.join(repo, script)] + sys.argv[4:]
runpy.run_path(sys.argv[0], run_name="__main__")
