// Package mtscore scores translations against references the way
// sacreBLEU 2.6 does by default: corpus BLEU (13a tokenization,
// exponential smoothing, any number of references, the closest reference
// length) and chrF2 (character 6-grams, beta 2), with sacreBLEU's output
// lines, JSON and signature strings. Other settings sacreBLEU offers
// (smoothing methods, n-gram orders, effective order, lowercasing, chrF++
// word n-grams, white space in character n-grams) are options.
//
// The version field of a signature is "2.6.0-attnx": sacreBLEU 2.6.0's
// algorithm, computed by attnx.
package mtscore
