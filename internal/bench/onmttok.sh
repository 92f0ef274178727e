#!/bin/bash
# The OpenNMT Tokenizer's speed in attnx (package onmttok) beside
# pyonmttok 1.37.1's on the same text, one thread each: lines per second
# tokenized and detokenized under the option sets of the two trained
# fixture models (aggressive, joiners, BPE; conservative, case markup,
# SentencePiece) and of OpenNMT-py's documented set (no subword model).
#
#   PYONMTTOK_DIR=... TOKENIZER_LIB=... TEXT=FILE bash internal/bench/onmttok.sh
#
# (PYONMTTOK_DIR and TOKENIZER_LIB as testdata/toolkits/make_onmt.sh;
# TEXT defaults to the first 5,000 lines of OpenNMT-py's toy English data
# at $ONMT_DATA/src-train.txt.)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
text=${TEXT:-}
if [ -z "$text" ]; then
	text=$(mktemp)
	head -n 5000 "$ONMT_DATA/src-train.txt" > "$text"
fi
echo "pyonmttok 1.37.1 (one thread):"
OMP_NUM_THREADS=1 PYTHONPATH=$PYONMTTOK_DIR LD_LIBRARY_PATH=$TOKENIZER_LIB \
	/usr/bin/python3 "$here/internal/bench/onmttok_speed.py" "$here/onmttok/testdata" "$text"
echo "attnx onmttok (GOMAXPROCS=1):"
cd "$here/onmttok"
ONMTTOK_BENCH_TEXT=$text GOMAXPROCS=1 go test -run XXX -bench BenchmarkTokenize -benchtime 3x -count 1 . > /dev/null # warm the build
n=$(grep -c '' "$text")
ONMTTOK_BENCH_TEXT=$text GOMAXPROCS=1 go test -run XXX -bench BenchmarkTokenize -benchtime "$((n * 3))x" -count 3 . |
	awk '/^Benchmark/ { split($1, p, "/"); k = p[2] " " p[3]; ns = $3; if (!(k in best) || ns < best[k]) best[k] = ns; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
	END { for (i = 1; i <= m; i++) printf "%s %.0f lines/s\n", order[i], 1e9 / best[order[i]] }'
