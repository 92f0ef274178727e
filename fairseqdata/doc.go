// Package fairseqdata reads what fairseq-preprocess writes into a data-bin
// directory, as fairseq 0.12.2 reads it for fairseq-generate: the
// dictionaries (dict.LANG.txt), a split's binarized sides
// (SPLIT.SRC-TGT.LANG.{bin,idx}) in the mmap indexed dataset format
// (--dataset-impl mmap, the default: an "MMIDIDX" index of int32 sizes and
// int64 byte pointers into the .bin), the older TNTIDX format (lazy and
// cached: dimension and element offsets, ids stored one above fairseq's,
// as Lua counted) and raw text (--dataset-impl raw: the lines, encoded
// with the dictionary as they are read); and the order in which
// fairseq-generate takes a language pair's sentences: sorted by target
// then source length (LanguagePairDataset.ordered_indices), cut into
// batches by batch_by_size's rules (--max-tokens, --batch-size,
// --required-batch-size-multiple), each batch's rows ordered by source
// length, longest first, as its collater sorts them.
package fairseqdata
