package translate

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// unkSources are the source tokens that replace_unk writes in place of an
// output <unk>, by source position: what the model's release of its
// toolkit writes. OpenNMT-py 2.x (onmt/translate/translation.py of 2.3.0)
// takes the example's raw source word at the attention's argmax, so a
// copy-attention model's word outside the source vocabulary comes out as
// the word (words holds the row's own such words: Sources.Words); 3.x
// (3.5.1) looks the source id up in the source vocabulary, so such a word
// comes out as the vocabulary's <unk>, and so do fairseq and attnx's own
// rules. enc is the row as the encoder sees it (encoderRow) and
// sourceTokens its sourceWords; both releases take the copy attention of
// a copy-attention model, which is the attention the searches record.
func (t *Translator) unkSources(enc []int64, sourceTokens []string, so searchOpts) []string {
	if so.openNMT && so.onmt2 {
		return sourceTokens
	}
	return t.src.strings(enc)
}

// UnkDict maps a source word to the target word that ReplaceUnk writes
// for an unknown output token aligned to it; a source word it lacks is
// copied as it is. It is fairseq's --replace-unk dictionary
// (LoadAlignDict) or OpenNMT-py's -phrase_table (LoadPhraseTable): both
// toolkits look up the very source token their replace_unk would copy
// (unkSources), and so does attnx.
type UnkDict map[string]string

// replacement is the word written for an unknown token aligned to the
// source token src: d's entry for it, else src itself.
func (d UnkDict) replacement(src string) string {
	if w, ok := d[src]; ok {
		return w
	}
	return src
}

// LoadAlignDict reads fairseq's alignment dictionary for --replace-unk
// (fairseq/utils.py load_align_dict of 0.12.2): each line is a source
// word and its target word, separated by white space; further columns
// are ignored and a later line for the same word wins. A line with fewer
// than two columns (fairseq fails on it with an IndexError) is an error
// that names the file and line.
func LoadAlignDict(path string) (UnkDict, error) {
	return loadUnkDict(path, func(line string) (string, string, bool) {
		cols := strings.Fields(line)
		if len(cols) < 2 {
			return "", "", false
		}
		return cols[0], cols[1], true
	}, "a source word and its target word separated by white space")
}

// LoadPhraseTable reads OpenNMT-py's -phrase_table
// (onmt/translate/translation.py of 2.3.0 and 3.5.1): each line, less its
// newline, is a source word, "|||", and its target word, kept exactly
// (spaces around "|||" are part of the words, as OpenNMT-py splits the
// line there and strips nothing); a later line for the same word wins. A
// line with no "|||" or more than one (OpenNMT-py fails on it with a
// ValueError) is an error that names the file and line. OpenNMT-py skips
// a phrase table whose file does not exist; attnx refuses it.
func LoadPhraseTable(path string) (UnkDict, error) {
	return loadUnkDict(path, func(line string) (string, string, bool) {
		src, tgt, ok := strings.Cut(line, phraseTableSeparator)
		if !ok || strings.Contains(tgt, phraseTableSeparator) {
			return "", "", false
		}
		return src, tgt, true
	}, `a source word, "`+phraseTableSeparator+`" and its target word`)
}

// phraseTableSeparator is OpenNMT-py's DefaultTokens.PHRASE_TABLE_SEPARATOR.
const phraseTableSeparator = "|||"

// loadUnkDict reads path a line at a time (without its "\n"), each line
// giving one entry through entry; want says what a line holds, for the
// error on a line entry refuses.
func loadUnkDict(path string, entry func(string) (string, string, bool), want string) (UnkDict, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("translate: replace-unk dictionary: %w", err)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("translate: replace-unk dictionary %s: not UTF-8 text", path)
	}
	d := UnkDict{}
	// Python's text files read "\r\n" and "\r" as "\n".
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	for n := 1; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		src, tgt, ok := entry(line)
		if !ok {
			return nil, fmt.Errorf("translate: replace-unk dictionary %s:%d: %q: expected %s", path, n, line, want)
		}
		d[src] = tgt
	}
	return d, nil
}
