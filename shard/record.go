package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/attnx/attnx/internal/atomicfile"
)

// Part returns the file a shard's translation is written to: output with
// ".shard-K-of-N" appended, in output's directory.
func Part(output string, s Spec) string {
	return fmt.Sprintf("%s.shard-%d-of-%d", output, s.K, s.N)
}

// RecordFile returns the record of the part file part: part + ".json".
func RecordFile(part string) string { return part + ".json" }

// Record says what a translated shard holds. It is written beside the part
// file once the part is complete, and Merge checks the parts against it.
type Record struct {
	// Shard is "K/N".
	Shard string `json:"shard"`
	// Source is the source file as named on the command line, SourceSize
	// its size in bytes, and [Start, End) the shard's bytes of it, whose
	// SHA-256 is SourceSHA256.
	Source       string `json:"source"`
	SourceSize   int64  `json:"source_size"`
	Start        int64  `json:"start"`
	End          int64  `json:"end"`
	SourceSHA256 string `json:"source_sha256"`
	// Sentences counts the shard's source lines, Lines the part's lines
	// (Sentences x LinesPerSentence), Bytes its size and PartSHA256 its
	// SHA-256.
	Sentences        int    `json:"sentences"`
	LinesPerSentence int    `json:"lines_per_sentence"`
	Lines            int    `json:"lines"`
	Bytes            int64  `json:"bytes"`
	PartSHA256       string `json:"part_sha256"`
	// Settings identifies the model and the decoding settings: the
	// Digest of SettingsFields (Settings.Fields). Shards translated with
	// different ones do not merge, and a shard is not skipped when they
	// changed.
	Settings       string            `json:"settings"`
	SettingsFields map[string]string `json:"settings_fields"`
}

// Source is the shard of a file being read.
type Source struct {
	Path       string
	Spec       Spec
	Size       int64
	Start, End int64
	f          *os.File
	sum        hash.Hash
}

// OpenSource opens path and finds shard s of it (Bounds). Read its bytes
// with Reader, then SHA256 gives their digest; Close closes the file.
func OpenSource(path string, s Spec) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file: a shard is a byte range of a file, found without reading the rest (give a file, not a pipe)", path)
	}
	var start, end int64
	if err == nil {
		start, end, err = Bounds(f, st.Size(), s)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("shard %v of %s: %w", s, path, err)
	}
	return &Source{Path: path, Spec: s, Size: st.Size(), Start: start, End: end, f: f, sum: sha256.New()}, nil
}

// Reader reads the shard's bytes once, hashing them.
func (s *Source) Reader() io.Reader {
	return io.TeeReader(io.NewSectionReader(s.f, s.Start, s.End-s.Start), s.sum)
}

// SHA256 is the hex digest of the bytes read through Reader.
func (s *Source) SHA256() string { return hex.EncodeToString(s.sum.Sum(nil)) }

// Close closes the file.
func (s *Source) Close() error { return s.f.Close() }

// LinesBefore counts the lines of the file before the shard (for error
// messages that name a line of the whole file); it reads the bytes before
// the shard.
func (s *Source) LinesBefore() (int, error) {
	n := 0
	buf := make([]byte, 256<<10)
	r := io.NewSectionReader(s.f, 0, s.Start)
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], newline)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Record returns the record of the shard as read, for a part translated
// with the settings fields (Settings.Fields); the caller fills in the
// part's counts once written.
func (s *Source) Record(fields map[string]string, sentences, linesPerSentence int) Record {
	return Record{Shard: s.Spec.String(), Source: s.Path, SourceSize: s.Size, Start: s.Start, End: s.End,
		SourceSHA256: s.SHA256(), Sentences: sentences, LinesPerSentence: linesPerSentence, Lines: sentences * linesPerSentence,
		Settings: Digest(fields), SettingsFields: fields}
}

// Finished reports whether part holds the translation want describes: its
// record says the same shard of the same source bytes with the same
// settings, and the part file is whole (its size and digest are the
// record's). When it is not, why says what differs ("" when there is no
// record: the shard was never finished).
func Finished(part string, want Record) (done bool, why string, err error) {
	have, err := readRecord(RecordFile(part))
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	switch {
	case have.Shard != want.Shard || have.SourceSize != want.SourceSize || have.Start != want.Start || have.End != want.End || have.SourceSHA256 != want.SourceSHA256:
		return false, "its source bytes differ from the record's (the source file changed)", nil
	case have.Settings != want.Settings:
		return false, "it was translated with other settings or another model", nil
	case have.LinesPerSentence != want.LinesPerSentence || have.Sentences != want.Sentences:
		return false, "its record counts other lines", nil
	}
	if err := checkPart(part, have); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

var newline = []byte{'\n'}

// Counter counts the lines, bytes and digest of a part as it is written.
type Counter struct {
	W     io.Writer
	Lines int
	Bytes int64
	sum   hash.Hash
}

// NewCounter wraps w.
func NewCounter(w io.Writer) *Counter { return &Counter{W: w, sum: sha256.New()} }

// Write writes p to W, counting and hashing the bytes W took.
func (c *Counter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.sum.Write(p[:n])
	c.Bytes += int64(n)
	c.Lines += bytes.Count(p[:n], newline)
	return n, err
}

// SHA256 is the hex digest of what was written.
func (c *Counter) SHA256() string { return hex.EncodeToString(c.sum.Sum(nil)) }

// WriteRecord completes rec with the part's counts from c, checks that the
// part has the lines the record expects, and writes the record beside the
// part (atomically): from then on the shard counts as done.
func WriteRecord(part string, rec Record, c *Counter) error {
	if c.Lines != rec.Lines {
		return fmt.Errorf("shard %s: %d lines written to %s, want %d (%d sentences x %d)", rec.Shard, c.Lines, part, rec.Lines, rec.Sentences, rec.LinesPerSentence)
	}
	rec.Bytes, rec.PartSHA256 = c.Bytes, c.SHA256()
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(RecordFile(part), append(data, '\n'), 0o644)
}

// maxRecordBytes bounds a record file: a record is a few kilobytes (its
// settings fields, one per model file and option).
const maxRecordBytes = 16 << 20

// readRecord reads and checks the record file path.
func readRecord(path string) (Record, error) {
	var r Record
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxRecordBytes {
		return r, fmt.Errorf("%s: not a shard record: over %d bytes", path, maxRecordBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%s: not a shard record: %w", path, err)
	}
	if dec.More() {
		return r, fmt.Errorf("%s: not a shard record: more after its JSON object", path)
	}
	if err := r.check(); err != nil {
		return r, fmt.Errorf("%s: not a shard record: %w", path, err)
	}
	return r, nil
}

// check checks that the record's numbers hold together: a byte range of
// the source, lines that are its sentences times the lines of each, and
// settings whose digest is Settings.
func (r *Record) check() error {
	switch {
	case r.SourceSize < 0 || r.Start < 0 || r.Start > r.End || r.End > r.SourceSize:
		return fmt.Errorf("bytes %d-%d of a %d-byte source: want 0 <= start <= end <= source_size", r.Start, r.End, r.SourceSize)
	case r.Sentences < 0 || r.LinesPerSentence < 1 || r.Bytes < 0 ||
		int64(r.Sentences)*int64(r.LinesPerSentence) != int64(r.Lines) || int64(r.Sentences) > r.End-r.Start:
		return fmt.Errorf("%d lines for %d sentences of %d lines each in %d source bytes: want lines = sentences x lines_per_sentence, and no more sentences than bytes", r.Lines, r.Sentences, r.LinesPerSentence, r.End-r.Start)
	case r.Settings != Digest(r.SettingsFields):
		return fmt.Errorf("settings %q is not the digest of its settings_fields", r.Settings)
	}
	return nil
}

// checkPart checks a part file against its record: size, digest and lines.
func checkPart(part string, rec Record) error {
	f, err := os.Open(part)
	if err != nil {
		return fmt.Errorf("its part file is missing: %w", err)
	}
	defer f.Close()
	c := NewCounter(io.Discard)
	if _, err := io.Copy(c, f); err != nil {
		return fmt.Errorf("reading %s: %w", part, err)
	}
	if c.Bytes != rec.Bytes || c.SHA256() != rec.PartSHA256 || c.Lines != rec.Lines {
		return fmt.Errorf("%s has %d bytes in %d lines, not the %d bytes in %d lines its record %s says (changed since it was written)", part, c.Bytes, c.Lines, rec.Bytes, rec.Lines, RecordFile(part))
	}
	return nil
}

var partRecord = regexp.MustCompile(`\.shard-([0-9]+)-of-([0-9]+)\.json$`)

// Merged sums up a Merge.
type Merged struct {
	Shards, Sentences, Lines int
	Bytes                    int64
	Source                   string
}

// MergeOptions configures Merge.
type MergeOptions struct {
	// Source is the source file the shards were translated from, read to
	// check each shard's bytes against its record; "" means the path the
	// records name (as the translating command was given it: relative to
	// the current directory, if it was).
	Source string
}

// Merge joins the parts of output's N shards, in order, into output
// (atomically), after checking that they are all there and fit together:
// one record per shard from 1/N to N/N, the same source and settings,
// byte ranges that tile the source from its first byte to its last,
// those bytes of the source as it is now the ones each shard was
// translated from (their SHA-256), and part files whole (size, digest and
// lines as recorded). The parts are left in place.
func Merge(output string, opt MergeOptions) (Merged, error) {
	var m Merged
	paths, err := shardRecords(output)
	if err != nil {
		return m, err
	}
	n := len(paths) - 1
	recs := make([]Record, n+1)
	for k := 1; k <= n; k++ {
		r, err := readRecord(paths[k])
		if err != nil {
			return m, err
		}
		if r.Shard != (Spec{k, n}).String() {
			return m, fmt.Errorf("%s records shard %q, not %d/%d", paths[k], r.Shard, k, n)
		}
		recs[k] = r
	}
	if err := sameSettings(recs, paths); err != nil {
		return m, err
	}
	first := recs[1]
	for k := 1; k <= n; k++ {
		r := recs[k]
		switch {
		case r.SourceSize != first.SourceSize || r.Source != first.Source:
			return m, fmt.Errorf("shard %s is of %s (%d bytes), shard 1/%d of %s (%d bytes): not the same source", r.Shard, r.Source, r.SourceSize, n, first.Source, first.SourceSize)
		case k == 1 && r.Start != 0, k > 1 && r.Start != recs[k-1].End, k == n && r.End != r.SourceSize:
			return m, fmt.Errorf("shard %s holds bytes %d-%d of %s, which do not follow on from the shards before it (the source changed between shards?): translate the shards again", r.Shard, r.Start, r.End, r.Source)
		}
		if err := checkPart(Part(output, Spec{k, n}), r); err != nil {
			return m, fmt.Errorf("shard %s: %w", r.Shard, err)
		}
	}
	src := opt.Source
	if src == "" {
		src = first.Source
	}
	if err := checkSource(src, output, recs); err != nil {
		return m, err
	}
	err = atomicfile.Write(output, 0o644, func(w io.Writer) error {
		for k := 1; k <= n; k++ {
			part := Part(output, Spec{k, n})
			f, err := os.Open(part)
			if err != nil {
				return err
			}
			c := NewCounter(w)
			_, err = io.Copy(c, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("copying %s: %w", part, err)
			}
			if c.SHA256() != recs[k].PartSHA256 {
				return fmt.Errorf("%s changed while it was merged", part)
			}
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	m = Merged{Shards: n, Source: first.Source}
	for k := 1; k <= n; k++ {
		m.Sentences += recs[k].Sentences
		m.Lines += recs[k].Lines
		m.Bytes += recs[k].Bytes
	}
	return m, nil
}

// sameSettings checks that the shards recs[1:] were translated with the
// same settings. When not, the odd one out is named (the shards whose
// settings most shards do not share; on a tie, those unlike shard 1's),
// with the settings fields in which it differs from the others.
func sameSettings(recs []Record, paths []string) error {
	n := len(recs) - 1
	count := map[string]int{}
	for _, r := range recs[1:] {
		count[r.Settings]++
	}
	if len(count) == 1 {
		return nil
	}
	common := recs[1].Settings
	for d, c := range count {
		if c > count[common] {
			common = d
		}
	}
	var ref Record
	var odd, others []string
	for k := 1; k <= n; k++ {
		if recs[k].Settings == common {
			ref = recs[k]
			if len(others) < maxListed {
				others = append(others, recs[k].Shard)
			}
			continue
		}
		if len(odd) < maxListed {
			odd = append(odd, recs[k].Shard)
		}
	}
	var k int
	for k = 1; recs[k].Settings == common; k++ {
	}
	r := recs[k]
	msg := fmt.Sprintf("shard %s was translated with other settings or another model than shard %s", r.Shard, strings.Join(others, ", "))
	if diff := settingsDiff(r.SettingsFields, ref.SettingsFields); diff != "" {
		msg = fmt.Sprintf("shard %s was translated with other settings than shard %s: %s", r.Shard, strings.Join(others, ", "), diff)
	}
	if len(odd) > 1 {
		msg += fmt.Sprintf(" (so were shards %s)", strings.Join(odd[1:], ", "))
	}
	return fmt.Errorf("%s: translate it again with theirs (remove %s)", msg, paths[k])
}

// settingsDiff names the fields in which have differs from want, with
// both values ("Options.Beam 5, theirs 4"), at most maxListed of them.
func settingsDiff(have, want map[string]string) string {
	names := map[string]bool{}
	for name := range have {
		names[name] = true
	}
	for name := range want {
		names[name] = true
	}
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		h, hok := have[name]
		w, wok := want[name]
		switch {
		case h == w && hok == wok:
			continue
		case !hok:
			h = "(none)"
		case !wok:
			w = "(none)"
		}
		if len(diffs) == maxListed {
			diffs = append(diffs, "and more")
			break
		}
		diffs = append(diffs, fmt.Sprintf("%s %s, theirs %s", name, h, w))
	}
	return strings.Join(diffs, "; ")
}

// maxListed bounds the shards an error lists by name.
const maxListed = 10

// shardRecords finds the records beside output of one count N, all N of
// them: paths[k] is shard k/N's (paths[0] is unused). A file named like a
// record whose K and N are not 1 <= K <= N <= MaxShards is an error that
// names it, as are records of two counts and missing shards.
func shardRecords(output string) ([]string, error) {
	byN, err := scanRecords(output)
	if err != nil {
		return nil, err
	}
	switch len(byN) {
	case 0:
		return nil, fmt.Errorf("%s: no finished shards (no %s.shard-K-of-N.json beside it): translate them first (attnx translate --src FILE --output %s --shard K/N)", output, filepath.Base(output), output)
	case 1:
	default:
		var ns []string
		for n := range byN {
			ns = append(ns, strconv.Itoa(n))
		}
		slices.Sort(ns)
		return nil, fmt.Errorf("%s: parts of %s shards: a run with another N left its parts; remove the stale ones", output, strings.Join(ns, " and of "))
	}
	var n int
	for n = range byN {
	}
	var missing []string
	count := 0
	for k := 1; k <= n; k++ {
		if byN[n][k] == "" {
			if count++; count <= maxListed {
				missing = append(missing, Spec{k, n}.String())
			}
		}
	}
	if count > maxListed {
		missing = append(missing, fmt.Sprintf("and %d more", count-maxListed))
	}
	if count > 0 {
		return nil, fmt.Errorf("%s: %d of %d shards not finished: %s (no %s.shard-K-of-%d.json for them): run them, then merge again", output, count, n, strings.Join(missing, ", "), filepath.Base(output), n)
	}
	paths := make([]string, n+1)
	for k, p := range byN[n] {
		paths[k] = p
	}
	return paths, nil
}

// RecordedCounts returns the counts N of the shards whose records lie
// beside output (output.shard-K-of-N.json), in order: what a run of the
// shards before this one was split into.
func RecordedCounts(output string) ([]int, error) {
	byN, err := scanRecords(output)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(byN)), nil
}

// scanRecords finds the records beside output by their names: byN[N][K]
// is shard K/N's. A file named like a record whose K and N are not
// 1 <= K <= N <= MaxShards is an error that names it.
func scanRecords(output string) (byN map[int]map[int]string, err error) {
	matches, err := filepath.Glob(globEscape(output) + ".shard-*-of-*.json")
	if err != nil {
		return nil, err
	}
	byN = map[int]map[int]string{}
	for _, path := range matches {
		g := partRecord.FindStringSubmatch(path)
		if g == nil || path != output+g[0] {
			continue // another output's, as out.txt.en.shard-1-of-2.json is for out.txt
		}
		k, kerr := strconv.Atoi(g[1])
		n, nerr := strconv.Atoi(g[2])
		if kerr != nil || nerr != nil || n < 1 || n > MaxShards || k < 1 || k > n {
			return nil, fmt.Errorf("%s: not the record of a shard: K and N of .shard-K-of-N.json must be whole numbers, 1 <= K <= N <= %d (remove it if it is a stray file)", path, MaxShards)
		}
		if byN[n] == nil {
			byN[n] = map[int]string{}
		}
		byN[n][k] = path
	}
	return byN, nil
}

// checkSource reads the source file src once and checks the byte range of
// it that recs[k] holds (shard k of len(recs)-1) against the digest the
// record holds: a shard translated before the source changed, even to as
// many bytes, is named.
func checkSource(src, output string, recs []Record) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("merge checks each shard against the source it was translated from, and cannot read it: %w (name where it is now)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("source %s: %w", src, err)
	}
	n := len(recs) - 1
	size := recs[1].SourceSize
	if st.Size() != size {
		return fmt.Errorf("source %s has %d bytes, the shards' records %d: it changed after they were translated; translate the shards again", src, st.Size(), size)
	}
	var stale []string
	for k := 1; k <= n; k++ {
		r := recs[k]
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, r.Start, r.End-r.Start)); err != nil {
			return fmt.Errorf("reading source %s: %w", src, err)
		}
		if hex.EncodeToString(h.Sum(nil)) != r.SourceSHA256 {
			stale = append(stale, fmt.Sprintf("%s (bytes %d-%d, %s)", r.Shard, r.Start, r.End, Part(output, Spec{k, n})))
		}
	}
	if len(stale) > 0 {
		if len(stale) > maxListed {
			stale = append(stale[:maxListed], fmt.Sprintf("and %d more", len(stale)-maxListed))
		}
		return fmt.Errorf("source %s changed after shard %s was translated: those bytes of it are not the ones its record's digest was made of; translate the shard again (remove its part and record)",
			src, strings.Join(stale, ", "))
	}
	return nil
}

// globEscape escapes filepath.Match's metacharacters in a literal path.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// RemoveParts removes the n parts of output and their records (after a
// Merge, when the parts are not wanted any more): records first, so that
// a part is never left counted as done without its file.
func RemoveParts(output string, n int) error {
	var errs []error
	for k := 1; k <= n; k++ {
		part := Part(output, Spec{k, n})
		for _, p := range []string{RecordFile(part), part} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
