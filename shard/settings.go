package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/translate"
)

// Settings is what decides a shard's translations: the model directory's
// files, the Translator's options and the corpus options it translates
// with, and how the caller writes each result. Two shards merge, and a
// finished shard is skipped, only when their settings are the same
// (Fields, and their Digest).
type Settings struct {
	// Model maps each file of the model directory (ModelFiles) to the
	// digest of its content.
	Model map[string]string
	// Options and Corpus are the options the shard is translated with.
	// Every field counts except those of Unchanging, which change how fast
	// it runs, not what it writes.
	Options translate.Options
	Corpus  translate.CorpusOptions
	// Output holds the caller's own settings that change the part's bytes
	// (how each result is written: "json" "true", "n_best" "5"), by name.
	Output map[string]string
}

// Unchanging names the fields of translate.Options ("Options.Threads")
// and translate.CorpusOptions ("Corpus.Lanes") that Settings leaves out,
// each with why: they change the speed or the memory of a run, not its
// output, so that a shard retried on another machine (other cores, other
// lanes) is still found finished. Every other field counts.
var Unchanging = map[string]string{
	"Options.Threads":         "threads per product: the same results, sooner or later",
	"Options.MaxIdleBytes":    "memory kept for later calls",
	"Options.MaxLiveBytes":    "memory of the calls in progress: a call waits, its result is the same",
	"Corpus.Lanes":            "batches decoded at the same time: each batch decodes alone",
	"Corpus.WithoutAttention": "whether results carry attention: what is written of it is Output's",
	"Corpus.AnyOrder":         "the order in which results reach the writer, which puts them in the file's order",
}

// Fields returns the settings as one value per name: "model/NAME" for
// each model file, "Options.FIELD" and "Corpus.FIELD" for the options
// (their JSON), "output/NAME" for Output. Records keep them, so that a
// merge can name the setting that differs.
func (s *Settings) Fields() (map[string]string, error) {
	f := map[string]string{}
	for name, sum := range s.Model {
		f["model/"+name] = sum
	}
	for name, v := range s.Output {
		f["output/"+name] = v
	}
	for prefix, v := range map[string]any{"Options": s.Options, "Corpus": s.Corpus} {
		if err := structFields(f, prefix, v); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// structFields adds each exported field of the struct v but those of
// Unchanging to f, as prefix.NAME and its JSON.
func structFields(f map[string]string, prefix string, v any) error {
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		sf := rv.Type().Field(i)
		name := prefix + "." + sf.Name
		if !sf.IsExported() || Unchanging[name] != "" {
			continue
		}
		data, err := json.Marshal(rv.Field(i).Interface())
		if err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
		f[name] = string(data)
	}
	return nil
}

// Digest returns "sha256:HEX", the digest of fields (in name order).
func Digest(fields map[string]string) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(h, "%q=%q\n", name, fields[name])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ModelFiles returns the files of the model directory dir, each with the
// digest of its content ("sha256:HEX"). Links are followed, to files and
// to dir itself: a release folder or a hub snapshot made of links has the
// digests of the files it points to, so relinking it to another model
// changes them. Every entry counts, hidden ones too, but atomicfile's
// temporaries (a write in progress) and subdirectories (a model's files
// are plain names in it); a link to nothing is recorded as missing.
func ModelFiles(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model directory: %w", err)
	}
	files := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.Contains(name, atomicfile.TempInfix) {
			continue
		}
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			files[name] = "missing (a link to nothing)"
			continue
		case err != nil:
			return nil, fmt.Errorf("model directory: %w", err)
		case st.IsDir():
			continue
		case !st.Mode().IsRegular():
			files[name] = "not a regular file: " + st.Mode().Type().String()
			continue
		}
		sum, err := fileDigest(path)
		if err != nil {
			return nil, fmt.Errorf("model directory: %w", err)
		}
		files[name] = sum
	}
	return files, nil
}

// fileDigest is "sha256:HEX" of the file's content.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
