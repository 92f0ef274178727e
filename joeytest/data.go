package joeytest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Set is a dev or test set as JoeyNMT's PlaintextDataset holds it: the
// source lines and, when {path}.{trg} exists, the reference lines, each
// side without its empty lines and preprocessed (lowercased when the
// side's lowercase is set).
type Set struct {
	// Name is "dev" or "test".
	Name string
	// SrcFile and TrgFile are the files read (TrgFile "" without
	// references).
	SrcFile, TrgFile string
	Src, Trg         []string
}

// HasTrg reports whether the set has references (JoeyNMT's has_trg).
func (s *Set) HasTrg() bool { return s.TrgFile != "" }

// LoadSet reads the set at path (data.dev or data.test, relative paths
// against base) as JoeyNMT 2.3's PlaintextDataset.load_data does: the
// source {path}.{src.lang} must exist, the references {path}.{trg.lang}
// are read when they exist; both must have as many lines, each side drops
// its empty lines, and a line of white space only is refused, as
// JoeyNMT's pre_process asserts.
func LoadSet(c *Config, name, path, base string) (*Set, error) {
	if !filepath.IsAbs(path) && base != "" {
		path = filepath.Join(base, path)
	}
	s := &Set{Name: name, SrcFile: path + "." + c.Src.Lang}
	src, err := readLines(s.SrcFile, c.Src)
	if err != nil {
		return nil, fmt.Errorf("%s set: %w", name, err)
	}
	trgFile := path + "." + c.Trg.Lang
	if _, err := os.Stat(trgFile); err == nil {
		s.TrgFile = trgFile
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s set: %w", name, err)
	}
	s.Src = src.kept
	if s.TrgFile == "" {
		return s, nil
	}
	trg, err := readLines(s.TrgFile, c.Trg)
	if err != nil {
		return nil, fmt.Errorf("%s set: %w", name, err)
	}
	if src.total != trg.total {
		return nil, fmt.Errorf("%s set: %s has %d lines and %s %d: want one reference a line", name, s.SrcFile, src.total, s.TrgFile, trg.total)
	}
	if !slices.Equal(src.empty, trg.empty) {
		return nil, fmt.Errorf("%s set: %s has empty lines at %s and %s at %s: JoeyNMT drops each side's empty lines on its own, so the pairs after them would not line up (JoeyNMT then fails on an assertion, or with as many on each side scores misaligned pairs); remove the pairs with an empty side", name, s.SrcFile, lineList(src.empty), s.TrgFile, lineList(trg.empty))
	}
	s.Trg = trg.kept
	return s, nil
}

type lines struct {
	kept  []string
	empty []int // the empty lines, counted from 1
	total int
}

// lineList names line numbers for an error: "no line", or "line 2, 5, 9"
// (the first ten, then how many more).
func lineList(ns []int) string {
	if len(ns) == 0 {
		return "no line"
	}
	var parts []string
	for i, n := range ns {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ns)-10))
			break
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return "line " + strings.Join(parts, ", ")
}

// readLines reads a file as JoeyNMT's read_list_from_file does (UTF-8,
// Python's str.splitlines), drops empty lines and preprocesses the others
// for side.
func readLines(path string, side Side) (lines, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return lines{}, err
	}
	if !utf8.Valid(data) {
		return lines{}, fmt.Errorf("%s is not UTF-8 text (JoeyNMT reads it as UTF-8)", path)
	}
	if side.Normalize {
		return lines{}, fmt.Errorf("%s: data.%s's normalize is set: attnx test does not apply JoeyNMT's unicode normalization", path, side.Lang)
	}
	if side.Pretokenizer != "none" {
		return lines{}, fmt.Errorf("%s: data.%s's tokenizer_cfg.pretokenizer is %q: attnx test scores text without one", path, side.Lang, side.Pretokenizer)
	}
	all := splitLines(string(data))
	out := lines{total: len(all)}
	for i, l := range all {
		if l == "" {
			out.empty = append(out.empty, i+1)
			continue
		}
		if strings.TrimSpace(l) == "" {
			return lines{}, fmt.Errorf("%s line %d is white space only: JoeyNMT refuses it (\"The input sentence is empty!\"); empty it or remove the pair", path, i+1)
		}
		if side.Lowercase {
			l = strings.ToLower(l)
		}
		out.kept = append(out.kept, l)
	}
	return out, nil
}

// splitLines is Python's str.splitlines: lines end at \n, \r\n, \r, \v,
// \f, \x1c, \x1d, \x1e, \x85, U+2028 and U+2029, a last line without an
// end counts, and the ends are dropped.
func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, s[start:i])
			if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				size++
			}
			start = i + size
		}
		i += size
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
