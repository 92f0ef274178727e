#!/bin/bash
# Makes testdata/toolkits/gnmt-{dle,mlperf}/parity/steps.json: the
# encoder outputs and four decoder steps, on three test sentences, computed by each repository's own
# GNMT modules on the committed checkpoint (gnmt_parity.py), for
# attention/gnmt_test.go's step-isolated parity. Nothing is trained: the
# checkpoints are make_gnmt.sh's.
#
# Needs DLE_DIR, MLPERF_DIR and SUBWORD_NMT_DIR as make_gnmt.sh does (the
# same versions: the fixtures' VERSION files), and Debian's torch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 PYTHONPATH=$SUBWORD_NMT_DIR
for kind in dle mlperf; do
	# The source sentences: the test set's BPE text as each Tokenizer
	# segments it (DLE: gnmt_segments.py's; MLPerf reads it so).
	repo=$DLE_DIR text=$here/gnmt-dle/expected/segments.tsv
	[ "$kind" = mlperf ] && repo=$MLPERF_DIR text=$here/gnmt-mlperf/test.bpe.en
	mkdir -p "$here/gnmt-$kind/parity"
	/usr/bin/python3 "$here/gnmt_parity.py" "$kind" "$repo" "$here/gnmt-$kind/model_best.pth" "$text" "$here/gnmt-$kind/parity/steps.json"
done
