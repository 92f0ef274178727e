package checkpoint

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/attnx/attnx/builder"
)

// The roots of an encoder-decoder model's keys: every attnx architecture
// names its tensors encoder.* and decoder.*.
const (
	EncoderRoot = "encoder"
	DecoderRoot = "decoder"
)

// Files names the checkpoint of one encoder-decoder model: one file (Path)
// or the encoder's and the decoder's state dicts in two files (Encoder and
// Decoder), as the article and PyTorch's tutorial train them.
type Files struct {
	Path             string
	Encoder, Decoder string
	// Average, when set, lists several checkpoints of one model, read and
	// averaged with Average into the model's weights; Path is then the
	// first of them (where files beside the checkpoint are looked for).
	Average []string
}

// Check says whether exactly one of the two forms is given.
func (f Files) Check() error {
	pair := f.Encoder != "" || f.Decoder != ""
	switch {
	case f.Path != "" && pair:
		return errors.New("give either one checkpoint or the encoder's and the decoder's, not both")
	case f.Path == "" && !pair:
		return errors.New("no checkpoint given")
	case pair && (f.Encoder == "" || f.Decoder == ""):
		return errors.New("the encoder's and the decoder's checkpoints go together: give both")
	case len(f.Average) > 0 && (pair || f.Path != f.Average[0]):
		return errors.New("averaged checkpoints are given as Average, with Path their first")
	}
	return nil
}

// String names the files for messages: "model.pt", or "enc.pt + dec.pt".
func (f Files) String() string {
	if len(f.Average) > 1 {
		return "the average of " + strings.Join(f.Average, ", ")
	}
	if f.Path != "" || f.Encoder == "" && f.Decoder == "" {
		return f.Path
	}
	return f.Encoder + " + " + f.Decoder
}

// Base is String with directories removed.
func (f Files) Base() string {
	if len(f.Average) > 1 {
		return "the average of " + baseNames(f.Average)
	}
	if f.Path != "" || f.Encoder == "" && f.Decoder == "" {
		return filepath.Base(f.Path)
	}
	return filepath.Base(f.Encoder) + " + " + filepath.Base(f.Decoder)
}

// LoadModel reads an encoder-decoder model's weights and puts their names
// in attnx's layout: one file is read with Load and a wrapper prefix in
// front of encoder./decoder. is stripped (StripPrefix); two files are read
// with LoadPair; several to average (Files.Average) with Average, and
// their average is treated as one file's. Then renames are applied in
// order (Rename). Every step that
// changes names adds a note.
func LoadModel(f Files, renames []Rename) (*StateDict, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	var sd *StateDict
	var err error
	if len(f.Average) > 0 {
		if sd, err = Average(f.Average); err != nil {
			return nil, err
		}
	} else if f.Path != "" {
		if sd, err = Load(f.Path); err != nil {
			return nil, err
		}
		sd.StripPrefix(EncoderRoot, DecoderRoot)
	} else if sd, err = LoadPair(f.Encoder, f.Decoder); err != nil {
		return nil, err
	}
	if err := sd.Rename(renames); err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	return sd, nil
}

// StripPrefix finds a prefix that wraps the model, in front of the root
// names (DataParallel and DistributedDataParallel's "module.", Lightning's
// "model.", any wrapper module's attribute), and removes it, with a note.
// The prefix is the one in front of the first root component of each key;
// it must be the same for every key that has one, and is not stripped when
// some key already starts with a root. Keys outside the prefix are dropped,
// with a note naming them. It reports whether it changed anything.
func (s *StateDict) StripPrefix(roots ...string) bool {
	isRoot := map[string]bool{}
	for _, r := range roots {
		isRoot[r] = true
	}
	prefix, found := "", false
	for _, k := range s.Keys {
		parts := strings.Split(k, ".")
		for i, p := range parts[:len(parts)-1] {
			if !isRoot[p] {
				continue
			}
			if i == 0 {
				return false // already in place
			}
			cand := strings.Join(parts[:i], ".") + "."
			if found && cand != prefix {
				return false // two different wrappers: ambiguous
			}
			prefix, found = cand, true
			break
		}
	}
	if !found {
		return false
	}
	var kept, dropped []string
	tensors := make(map[string]*builder.Tensor, len(s.Tensors))
	for _, k := range s.Keys {
		if !strings.HasPrefix(k, prefix) {
			dropped = append(dropped, k)
			continue
		}
		nk := strings.TrimPrefix(k, prefix)
		t := s.Tensors[k]
		t.Name = nk
		tensors[nk] = t
		kept = append(kept, nk)
	}
	s.Keys, s.Tensors = kept, tensors
	note := fmt.Sprintf("removed the prefix %q in front of %s.: %s", prefix, strings.Join(roots, "./"), wrapperKind(prefix))
	s.Notes = append(s.Notes, note)
	if len(dropped) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("dropped %s outside %s: %s", nKeys(len(dropped)), prefix, listKeys(dropped, 5)))
	}
	return true
}

func wrapperKind(prefix string) string {
	switch {
	case prefix == "module." || strings.HasSuffix(prefix, ".module."):
		return "the model was wrapped in DataParallel or DistributedDataParallel"
	case prefix == "model.":
		return "the model was an attribute of a wrapper such as a LightningModule"
	}
	return "the model was an attribute of a wrapper module"
}

func nKeys(n int) string {
	if n == 1 {
		return "1 key"
	}
	return fmt.Sprintf("%d keys", n)
}

func listKeys(keys []string, max int) string {
	if len(keys) <= max {
		return strings.Join(keys, ", ")
	}
	return strings.Join(keys[:max], ", ") + fmt.Sprintf(" and %d more", len(keys)-max)
}

// LoadPair reads a model saved as two files, the encoder's state dict and
// the decoder's (each in any form Load reads), and names their tensors
// encoder.* and decoder.*. A file whose keys all start with "module."
// (DataParallel) has that stripped first; a file whose keys already start
// with its root is taken as it is.
func LoadPair(encoderPath, decoderPath string) (*StateDict, error) {
	out := &StateDict{Tensors: map[string]*builder.Tensor{}}
	var formats []string
	for _, part := range []struct{ path, root, other string }{
		{encoderPath, EncoderRoot, DecoderRoot},
		{decoderPath, DecoderRoot, EncoderRoot},
	} {
		sd, err := Load(part.path)
		if err != nil {
			return nil, err
		}
		base := filepath.Base(part.path)
		for _, n := range sd.Notes {
			out.Notes = append(out.Notes, base+": "+n)
		}
		if len(sd.Keys) == 0 {
			return nil, fmt.Errorf("%s: holds no tensors", part.path)
		}
		if allHavePrefix(sd.Keys, "module.") {
			sd.renameAll("module.", "")
			out.Notes = append(out.Notes, fmt.Sprintf(`%s: removed the prefix "module." (DataParallel or DistributedDataParallel)`, base))
		}
		if anyHasPrefix(sd.Keys, part.other+".") {
			return nil, fmt.Errorf("%s: has %s.* keys: it holds a whole model (or the %s), not the %s alone; pass it as the one checkpoint", part.path, part.other, part.other, part.root)
		}
		if !allHavePrefix(sd.Keys, part.root+".") {
			sd.renameAll("", part.root+".")
			out.Notes = append(out.Notes, fmt.Sprintf("%s: keys named %s.*", base, part.root))
		}
		for _, k := range sd.Keys {
			out.Keys = append(out.Keys, k)
			out.Tensors[k] = sd.Tensors[k]
		}
		if len(formats) == 0 || formats[0] != sd.Format {
			formats = append(formats, sd.Format)
		}
	}
	out.Format = strings.Join(formats, "+")
	return out, nil
}

func allHavePrefix(keys []string, p string) bool {
	for _, k := range keys {
		if !strings.HasPrefix(k, p) {
			return false
		}
	}
	return true
}

func anyHasPrefix(keys []string, p string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// renameAll replaces prefix from with to in every key that has it; the
// caller knows the result is collision-free.
func (s *StateDict) renameAll(from, to string) {
	tensors := make(map[string]*builder.Tensor, len(s.Tensors))
	for i, k := range s.Keys {
		nk := k
		if strings.HasPrefix(k, from) {
			nk = to + strings.TrimPrefix(k, from)
		}
		t := s.Tensors[k]
		t.Name = nk
		tensors[nk] = t
		s.Keys[i] = nk
	}
	s.Tensors = tensors
}

// Rename is a key prefix rename, given on the command line as FROM=TO.
type Rename struct{ From, To string }

// ParseRename parses FROM=TO. FROM may be empty (TO is then put in front of
// every key), TO too (FROM is removed).
func ParseRename(s string) (Rename, error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok {
		return Rename{}, fmt.Errorf("%q has no '=': want FROM=TO, e.g. attention.W1=attention.Wa", s)
	}
	if from == to {
		return Rename{}, fmt.Errorf("%q renames a prefix to itself", s)
	}
	return Rename{From: from, To: to}, nil
}

// String gives the rename as it is written on the command line, FROM=TO.
func (r Rename) String() string { return r.From + "=" + r.To }

// matches tells whether key starts with the rename's FROM: FROM ending in
// "." (or empty) is a plain prefix; otherwise it must be the whole key or
// a run of whole dotted components ("attention.W1" matches
// "attention.W1.weight", not "attention.W10.weight").
func (r Rename) matches(key string) bool {
	if r.From == "" || strings.HasSuffix(r.From, ".") {
		return strings.HasPrefix(key, r.From)
	}
	return key == r.From || strings.HasPrefix(key, r.From+".")
}

func (r Rename) apply(key string) string { return r.To + strings.TrimPrefix(key, r.From) }

// Rename applies renames in order, each to the keys as the previous ones
// left them, with a note for each. A rename that matches no key, or that
// would give two tensors the same name, is an error naming it.
func (s *StateDict) Rename(renames []Rename) error {
	for _, r := range renames {
		note, err := s.rename(r)
		if err != nil {
			return err
		}
		s.Notes = append(s.Notes, note)
	}
	return nil
}

func (s *StateDict) rename(r Rename) (string, error) {
	keys := make([]string, len(s.Keys))
	tensors := make(map[string]*builder.Tensor, len(s.Tensors))
	from := map[string]string{}
	var changed []string
	for i, k := range s.Keys {
		nk := k
		if r.matches(k) {
			nk = r.apply(k)
			changed = append(changed, k+" -> "+nk)
		}
		if nk == "" {
			return "", fmt.Errorf("map %s: would leave %s with an empty name", r, k)
		}
		if prev, dup := from[nk]; dup {
			return "", fmt.Errorf("map %s: %s and %s would both be named %s", r, prev, k, nk)
		}
		from[nk] = k
		keys[i] = nk
	}
	if len(changed) == 0 {
		return "", fmt.Errorf("map %s: no key starts with %q (keys: %s)", r, r.From, listKeys(sortedCopy(s.Keys), 8))
	}
	for i, k := range s.Keys {
		t := s.Tensors[k]
		t.Name = keys[i]
		tensors[keys[i]] = t
	}
	s.Keys, s.Tensors = keys, tensors
	return fmt.Sprintf("map %s renamed %s: %s", r, nKeys(len(changed)), listKeys(changed, 3)), nil
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
