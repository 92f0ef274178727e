package shard

import (
	"bufio"
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
func translateShard(t *testing.T, src, output string, s Spec, settings string, n int) {
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
	rec := in.Record(settings, len(lines), n)
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

func writeSource(t *testing.T, dir string, lines int) string {
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
	m, err := Merge(out)
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
		}, "shard 3/4 was translated with other settings"},
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
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := writeSource(t, dir, 50)
			out := filepath.Join(dir, "out.txt")
			for k := 1; k <= 4; k++ {
				translateShard(t, src, out, Spec{k, 4}, "s1", 1)
			}
			c.spoil(t, src, out)
			_, err := Merge(out)
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
		return in.Record("s1", countLines(t, src, in), 1)
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
