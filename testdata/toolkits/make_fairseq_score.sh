#!/bin/bash
# Makes testdata/toolkits/fairseq-score with fairseq 0.12.2's own
# fairseq-generate --score-reference: fairseq-long's checkpoint scores the
# references of make_fairseq_generate.sh's data-bin (its test set, 48
# pairs) by teacher forcing (SequenceScorer), and prints them as
# hypotheses: H- the mean log-prob per token in base 2, P- each token's
# (</s> included). attnx's test (translate TestScoreMatchesFairseq)
# exports the checkpoint and scores the S- and T- lines' pieces.
#
# Needs what make_fairseq_generate.sh needs for its default variant
# (FAIRSEQ_DIR with libbleu built in place, HYDRA_DIR, OMEGACONF_DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
PY=/usr/bin/python3
out="$here/fairseq-score"
mkdir -p "$out"
$PY "$here/fairseq_run.py" generate "$here/fairseq-generate/data-bin" --path "$here/fairseq-long/checkpoint_best.pt" --cpu --score-reference |
	grep -v -E -e '^ANTLR runtime and generated code versions disagree' -e '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} \| ' > "$out/score-reference.out"
echo "fairseq 0.12.2 (4a388e64cd646ed7d7ad8de8fae55df2b8eea91d) fairseq-generate --score-reference, hydra-core 1.0.7, omegaconf 2.0.6, torch $($PY -c 'import torch; print(torch.__version__)'), model ../fairseq-long/checkpoint_best.pt, data ../fairseq-generate/data-bin, made by testdata/toolkits/make_fairseq_score.sh" > "$out/VERSION"
