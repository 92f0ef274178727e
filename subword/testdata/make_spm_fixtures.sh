#!/usr/bin/env bash
# Regenerates the SentencePiece fixtures of package subword with
# SentencePiece's own tools (Debian's sentencepiece package: spm_train,
# spm_encode, spm_decode). The models and the expected outputs are data
# made by SentencePiece; attnx's code only reads them.
#
#   corpus.txt        the lines encoded (license texts of Debian's
#                     base-files, the seed article, and hand-written lines
#                     with odd white space, full-width forms, scripts and
#                     characters outside the models' coverage)
#   NAME.model        spm_train models (see below)
#   NAME.pieces       spm_encode --output_format=piece of corpus.txt
#   NAME.ids          spm_encode --output_format=id of corpus.txt
#   NAME.decoded      spm_decode --input_format=piece of NAME.pieces
set -euo pipefail
cd "$(dirname "$0")"
command -v spm_train >/dev/null || { echo "needs spm_train (apt-get install sentencepiece)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
	cat /usr/share/common-licenses/{GPL-3,Apache-2.0,MPL-2.0,Artistic,LGPL-2.1}
	cat ../../../shared/seed/attention-article.txt 2>/dev/null || cat /work/shared/seed/attention-article.txt
} | /usr/bin/python3 -c '
import sys
lines = [l.rstrip("\n") for l in sys.stdin]
# Keep white space as it is in the files (runs of spaces, tabs, leading
# indentation): the normaliser has to squeeze it.
extra = [
    "", "   ", "\t", "  leading and trailing  ", "tabs\tand\u00a0no-break\u3000spaces",
    "ＦＵＬＬＷＩＤＴＨ　ｆｏｒｍｓ　１２３", "ligatures ﬁ ﬂ and ① ② ③ ⅷ", "café vs cafe\u0301",
    "Ελληνικά и русский текст", "हिन्दी पाठ", "العربية", "日本語のテキストと한국어",
    "emoji 😀👍🏽 and symbols ∑∫√", "numbers 3.14159e-10 1,000,000 -42 0x1F",
    "punctuation!!! ??? ... … — – «quotes» “curly” ‘single’", "zero\u200bwidth and soft\u00adhyphen",
    "MiXeD CaSe WoRdS", "a", "ab", "The attention weights sum to one.",
    "注意力机制 attention mechanism 的 score 函数", "x" * 300,
]
for l in lines + extra:
    print(l)
' > corpus.txt

# training text without the hand-written lines, so that some of their
# characters are unknown to the models
head -n -22 corpus.txt > "$work/train.txt"

common=(--input="$work/train.txt" --character_coverage=0.9995 --num_threads=2 --minloglevel=2)
spm_train "${common[@]}" --model_prefix=unigram --model_type=unigram --vocab_size=1000
spm_train "${common[@]}" --model_prefix=bpe --model_type=bpe --vocab_size=1000
spm_train "${common[@]}" --model_prefix=bpe_bytes --model_type=bpe --vocab_size=1200 --byte_fallback=true \
	--normalization_rule_name=identity --user_defined_symbols='<sep>,@@'
spm_train "${common[@]}" --model_prefix=unigram_plain --model_type=unigram --vocab_size=800 \
	--normalization_rule_name=nfkc_cf --remove_extra_whitespaces=false --add_dummy_prefix=false --user_defined_symbols='attention'
rm -f ./*.vocab

for m in unigram bpe bpe_bytes unigram_plain; do
	spm_encode --model=$m.model --output_format=piece < corpus.txt > $m.pieces
	spm_encode --model=$m.model --output_format=id < corpus.txt > $m.ids
	spm_decode --model=$m.model --input_format=piece < $m.pieces > $m.decoded
done
wc -l corpus.txt ./*.pieces
