#!/usr/bin/env bash
# Regenerates the subword-nmt fixtures of package subword with subword-nmt
# itself (github.com/rsennrich/subword-nmt, not packaged by Debian: pass the
# directory of a checkout). The codes and outputs are data made by
# subword-nmt; attnx's code only reads them.
#
#   bpe.codes           learn_bpe -s 800 on the corpus's first 1982 lines
#                       (version 0.2 codes)
#   bpe01.codes         the same merges without the version line, which
#                       apply_bpe reads as version 0.1 codes
#   bpe.vocab           get_vocab of the segmented corpus (form feeds left out)
#   corpus.CASE.bpe     apply_bpe of corpus.txt for each CASE below
#
# usage: make_bpe_fixtures.sh SUBWORD_NMT_CHECKOUT
set -euo pipefail
src=$(cd "${1:?usage: $0 SUBWORD_NMT_CHECKOUT}" && pwd)
cd "$(dirname "$0")"
snmt() { local tool=${1//-/_}; shift; PYTHONPATH="$src" /usr/bin/python3 "$src/subword_nmt/$tool.py" "$@"; }

head -n 1982 corpus.txt | snmt learn-bpe -s 800 > bpe.codes
tail -n +2 bpe.codes > bpe01.codes
# apply_bpe reads the vocabulary through a codecs reader, which also breaks
# lines at form feeds: leave out the pieces holding one.
snmt apply-bpe -c bpe.codes < corpus.txt | snmt get-vocab | grep -v $'\f' > bpe.vocab

snmt apply-bpe -c bpe.codes < corpus.txt > corpus.plain.bpe
snmt apply-bpe -c bpe01.codes < corpus.txt > corpus.v01.bpe
snmt apply-bpe -c bpe.codes --merges 200 < corpus.txt > corpus.m200.bpe
snmt apply-bpe -c bpe.codes --glossaries 'GPL' 'Licen[cs]e' '[0-9]+' < corpus.txt > corpus.gloss.bpe
snmt apply-bpe -c bpe.codes --vocabulary bpe.vocab --vocabulary-threshold 5 < corpus.txt > corpus.vocab5.bpe
wc -l bpe.codes corpus.*.bpe
