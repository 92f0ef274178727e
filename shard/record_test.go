package shard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/atomicfile"
)

// translateShard does what attnx translate --shard does with a stand-in
// translation (each line upper-cased, n lines per sentence): reads shard s
// of src, writes its part and then its record.
func translateShard(t testing.TB, src, output string, s Spec, settings string, n int) {
	t.Helper()
	in, err := OpenSource(src, s)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var lines []string
	sc := bufio.NewScanner(in.Reader())
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	rec := in.Record(testFields(settings), len(lines), n)
	part := Part(output, s)
	if done, _, err := Finished(part, rec); err != nil || done {
		t.Fatalf("shard %v: done %v, err %v before it was translated", s, done, err)
	}
	f, err := atomicfile.Create(part, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCounter(f)
	for _, l := range lines {
		for range n {
			io.WriteString(c, strings.ToUpper(l)+"\n")
		}
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := WriteRecord(part, rec, c); err != nil {
		t.Fatal(err)
	}
	if done, why, err := Finished(part, rec); err != nil || !done {
		t.Fatalf("shard %v not finished after its record: %s %v", s, why, err)
	}
}

// testFields stands for a shard's settings fields.
func testFields(settings string) map[string]string { return map[string]string{"test": settings} }

func writeSource(t testing.TB, dir string, lines int) string {
	var b strings.Builder
	for i := range lines {
		b.WriteString(strings.Repeat("ab", i%7) + "\n")
	}
	src := filepath.Join(dir, "src.txt")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return src
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	src := writeSource(t, dir, 101)
	out := filepath.Join(dir, "out [1].txt") // glob characters in the name
	for k := 1; k <= 4; k++ {
		translateShard(t, src, out, Spec{k, 4}, "s1", 2)
	}
	m, err := Merge(out, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(src)
	var want strings.Builder
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l != "" {
			want.WriteString(strings.ToUpper(l) + strings.ToUpper(l))
		}
	}
	got, _ := os.ReadFile(out)
	if string(got) != want.String() {
		t.Errorf("merged output differs from the lines translated in one go")
	}
	if m.Shards != 4 || m.Sentences != 101 || m.Lines != 202 || m.Bytes != int64(len(got)) {
		t.Errorf("Merge = %+v, want 4 shards, 101 sentences, 202 lines, %d bytes", m, len(got))
	}
	if err := RemoveParts(out, m.Shards); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "out*"))
	if len(left) != 1 || left[0] != out {
		t.Errorf("after RemoveParts: %q, want the merged file alone", left)
	}
}

func TestMergeRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, src, out string)
		err   string
	}{
		{"missing shards", func(t *testing.T, src, out string) {
			os.Remove(RecordFile(Part(out, Spec{2, 4})))
			os.Remove(RecordFile(Part(out, Spec{4, 4})))
		}, "2 of 4 shards not finished: 2/4, 4/4"},
		{"other settings", func(t *testing.T, src, out string) {
			translateShard(t, src, out+"x", Spec{3, 4}, "s2", 1) // elsewhere
			os.Rename(Part(out+"x", Spec{3, 4}), Part(out, Spec{3, 4}))
			os.Rename(RecordFile(Part(out+"x", Spec{3, 4})), RecordFile(Part(out, Spec{3, 4})))
		}, "shard 3/4 was translated with other settings than shard 1/4, 2/4, 4/4: test s2, theirs s1: translate it again"},
		{"shard 1 the odd one", func(t *testing.T, src, out string) {
			translateShard(t, src, out+"x", Spec{1, 4}, "s2", 1)
			os.Rename(Part(out+"x", Spec{1, 4}), Part(out, Spec{1, 4}))
			os.Rename(RecordFile(Part(out+"x", Spec{1, 4})), RecordFile(Part(out, Spec{1, 4})))
		}, "shard 1/4 was translated with other settings than shard 2/4, 3/4, 4/4: test s2, theirs s1"},
		{"truncated part", func(t *testing.T, src, out string) {
			os.Truncate(Part(out, Spec{2, 4}), 3)
		}, "shard 2/4: "},
		{"part deleted", func(t *testing.T, src, out string) {
			os.Remove(Part(out, Spec{1, 4}))
		}, "part file is missing"},
		{"stale N", func(t *testing.T, src, out string) {
			translateShard(t, src, out, Spec{1, 2}, "s1", 1)
		}, "parts of 2 and of 4 shards"},
		{"none", func(t *testing.T, src, out string) {
			for k := 1; k <= 4; k++ {
				os.Remove(RecordFile(Part(out, Spec{k, 4})))
			}
		}, "no finished shards"},
		{"bad record", func(t *testing.T, src, out string) {
			os.WriteFile(RecordFile(Part(out, Spec{2, 4})), []byte(`{"shard": "2/4", "oops": 1}`), 0o644)
		}, "not a shard record"},
		{"source rewritten to as many bytes", func(t *testing.T, src, out string) {
			data, _ := os.ReadFile(src)
			data[len(data)-3] = 'X' // a letter of shard 4/4, its record written before
			os.WriteFile(src, data, 0o644)
		}, "changed after shard 4/4 (bytes "},
		{"source gone", func(t *testing.T, src, out string) {
			os.Remove(src)
		}, "cannot read it"},
		{"stray record of 400000000 shards", func(t *testing.T, src, out string) {
			os.WriteFile(out+".shard-1-of-400000000.json", []byte("{}\n"), 0o644)
		}, "out.txt.shard-1-of-400000000.json: not the record of a shard"},
		{"stray record of an N past int64", func(t *testing.T, src, out string) {
			os.WriteFile(out+".shard-1-of-99999999999999999999.json", []byte("{}\n"), 0o644)
		}, "out.txt.shard-1-of-99999999999999999999.json: not the record of a shard"},
		{"record past its source", func(t *testing.T, src, out string) {
			editRecord(t, RecordFile(Part(out, Spec{4, 4})), func(r *Record) { r.End = r.SourceSize + 1 })
		}, "want 0 <= start <= end <= source_size"},
		{"settings not their fields' digest", func(t *testing.T, src, out string) {
			editRecord(t, RecordFile(Part(out, Spec{2, 4})), func(r *Record) { r.SettingsFields["test"] = "s2" })
		}, "is not the digest of its settings_fields"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := writeSource(t, dir, 50)
			out := filepath.Join(dir, "out.txt")
			for k := 1; k <= 4; k++ {
				translateShard(t, src, out, Spec{k, 4}, "s1", 1)
			}
			c.spoil(t, src, out)
			_, err := Merge(out, MergeOptions{})
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Merge: %v, want an error with %q", err, c.err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused merge wrote %s", out)
			}
		})
	}
}

// TestFinished: a shard is redone when its source bytes, its settings or
// its part changed since its record was written.
func TestFinished(t *testing.T) {
	dir := t.TempDir()
	src := writeSource(t, dir, 40)
	out := filepath.Join(dir, "out.txt")
	translateShard(t, src, out, Spec{2, 3}, "s1", 1)
	read := func(s Spec) Record {
		in, err := OpenSource(src, s)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		if _, err := io.Copy(io.Discard, in.Reader()); err != nil {
			t.Fatal(err)
		}
		return in.Record(testFields("s1"), countLines(t, src, in), 1)
	}
	rec := read(Spec{2, 3})
	part := Part(out, Spec{2, 3})
	if done, why, _ := Finished(part, rec); !done {
		t.Fatalf("not finished: %s", why)
	}
	other := rec
	other.Settings = "s2"
	if done, why, _ := Finished(part, other); done || !strings.Contains(why, "other settings") {
		t.Errorf("other settings: done %v (%s)", done, why)
	}
	other = rec
	other.SourceSHA256 = "00"
	if done, why, _ := Finished(part, other); done || !strings.Contains(why, "source") {
		t.Errorf("other source: done %v (%s)", done, why)
	}
	os.WriteFile(part, []byte("X\n"), 0o644)
	if done, why, _ := Finished(part, rec); done || !strings.Contains(why, "changed since") {
		t.Errorf("spoilt part: done %v (%s)", done, why)
	}
}

func countLines(t *testing.T, src string, in *Source) int {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data[in.Start:in.End]), "\n")
}

// editRecord rewrites the record file path with edit applied.
func editRecord(t *testing.T, path string, edit func(*Record)) {
	t.Helper()
	r, err := readRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(&r)
	data, _ := json.Marshal(r)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMergeManyMissing: of a million shards, two finished, merge lists the
// first missing ones and counts the rest (quickly: it does not build a
// list of a million).
func TestMergeManyMissing(t *testing.T) {
	dir := t.TempDir()
	src := writeSource(t, dir, 50)
	out := filepath.Join(dir, "out.txt")
	translateShard(t, src, out, Spec{1, MaxShards}, "s1", 1)
	translateShard(t, src, out, Spec{3, MaxShards}, "s1", 1)
	_, err := Merge(out, MergeOptions{})
	want := fmt.Sprintf("%d of %d shards not finished: 2/%d, 4/%d,", MaxShards-2, MaxShards, MaxShards, MaxShards)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("and %d more", MaxShards-2-maxListed)) {
		t.Errorf("Merge: %v, want %q and a count of the rest", err, want)
	}
}

// TestMergeSourceElsewhere: the source moved since the shards were
// translated; MergeOptions.Source names it, and its bytes are checked.
func TestMergeSourceElsewhere(t *testing.T) {
	dir := t.TempDir()
	src := writeSource(t, dir, 30)
	out := filepath.Join(dir, "out.txt")
	translateShard(t, src, out, Spec{1, 2}, "s1", 1)
	translateShard(t, src, out, Spec{2, 2}, "s1", 1)
	moved := filepath.Join(t.TempDir(), "src.txt")
	if err := os.Rename(src, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(out, MergeOptions{}); err == nil || !strings.Contains(err.Error(), src) {
		t.Fatalf("Merge with the source moved: %v", err)
	}
	if m, err := Merge(out, MergeOptions{Source: moved}); err != nil || m.Sentences != 30 {
		t.Fatalf("Merge with Source: %+v, %v", m, err)
	}
	os.WriteFile(moved, []byte(strings.Repeat("x\n", 45)), 0o644)
	if _, err := Merge(out, MergeOptions{Source: moved}); err == nil || !strings.Contains(err.Error(), "it changed after they were translated") {
		t.Errorf("Merge with another file as Source: %v", err)
	}
}
