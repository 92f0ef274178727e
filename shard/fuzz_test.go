package shard

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzMerge gives Merge a stray file beside the records of a finished
// 2-shard translation: a name ending ".shard-K-of-N.json" (the fuzzed
// suffix after "out.txt") with fuzzed content, replacing a record when it
// has one's name. Merge must not panic, nor take long (a huge N is not
// counted to), nor write its output unless it succeeds; when it succeeds
// the output is the one the two shards make, byte for byte.
func FuzzMerge(f *testing.F) {
	dir := f.TempDir()
	src := writeSource(f, dir, 40)
	clean := filepath.Join(dir, "clean.txt")
	for k := 1; k <= 2; k++ {
		translateShard(f, src, clean, Spec{k, 2}, "s1", 1)
	}
	rec1, _ := os.ReadFile(RecordFile(Part(clean, Spec{1, 2})))
	if _, err := Merge(clean, MergeOptions{}); err != nil {
		f.Fatal(err)
	}
	want, _ := os.ReadFile(clean)
	for _, seed := range []struct {
		name string
		data []byte
	}{
		{".shard-1-of-400000000.json", []byte("{}\n")},
		{".shard-1-of-99999999999999999999.json", []byte("{}")},
		{".shard-0-of-2.json", rec1},
		{".shard-1-of-2.json", rec1},
		{".shard-1-of-2.json", bytes.Replace(rec1, []byte(`"start": 0`), []byte(`"start": -5`), 1)},
		{".shard-1-of-2.json", bytes.Replace(rec1, []byte(`"lines_per_sentence": 1`), []byte(`"lines_per_sentence": 0`), 1)},
		{".shard-2-of-2.json", []byte(`{"shard": "2/2", "end": 9223372036854775807, "source_size": 9223372036854775807}`)},
		{".shard-3-of-3.json", rec1},
		{".shard-1-of-2.json", []byte("[]")},
	} {
		f.Add(seed.name, seed.data)
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if name == "" || strings.ContainsAny(name, "/\x00") || len(name) > 200 {
			return
		}
		work := t.TempDir()
		out := filepath.Join(work, "out.txt")
		for k := 1; k <= 2; k++ {
			part := Part(clean, Spec{k, 2})
			for _, p := range []string{part, RecordFile(part)} {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(work, "out.txt"+strings.TrimPrefix(p, clean)), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.WriteFile(out+name, data, 0o644); err != nil {
			return // a name the file system refuses
		}
		m, err := Merge(out, MergeOptions{Source: src})
		got, rerr := os.ReadFile(out)
		if err != nil {
			if rerr == nil {
				t.Fatalf("Merge failed (%v) but wrote %s", err, out)
			}
			return
		}
		if !bytes.Equal(got, want) || m.Shards != 2 || m.Bytes != int64(len(want)) {
			t.Fatalf("Merge with %q beside it: %+v, %d bytes, want the 2 shards' %d bytes", name, m, len(got), len(want))
		}
	})
}
