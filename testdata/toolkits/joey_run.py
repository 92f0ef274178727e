"""Runs JoeyNMT 2.3's command line (python -m joeynmt train|test|translate)
from the tree at $JOEY_DIR, with stand-ins for what Debian does not package
and these runs never call (joey_standins.py: tensorboard logging,
sacrebleu scoring). subword_nmt (v0.3.8) comes from PYTHONPATH.

    JOEY_DIR=... /usr/bin/python3 joey_run.py translate cfg.yaml --ckpt best.ckpt -o out.txt < test.en
"""
import os
import runpy
import sys

sys.path.insert(0, os.environ["JOEY_DIR"])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import joey_standins  # noqa: E402

joey_standins.install()
sys.argv[0] = "joeynmt"
runpy.run_module("joeynmt", run_name="__main__")
