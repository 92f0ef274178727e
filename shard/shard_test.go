package shard

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
)

func TestParse(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	none := env()
	slurm := func(id, count, lo, hi string) func(string) string {
		return env(EnvSlurmTask, id, EnvSlurmCount, count, EnvSlurmMin, lo, EnvSlurmMax, hi)
	}
	for _, c := range []struct {
		flag   string
		getenv func(string) string
		want   Spec
		err    string // a part of the error; "" for none
	}{
		{"1/1", none, Spec{1, 1}, ""},
		{"3/4", none, Spec{3, 4}, ""},
		{"4/4", none, Spec{4, 4}, ""},
		{"0/4", none, Spec{}, "shards count from 1"},
		{"5/4", none, Spec{}, "from 1 to 4"},
		{"2/0", none, Spec{}, "N in K/N"},
		{"2", none, Spec{}, "want K/N"},
		{"a/b", none, Spec{}, "N in K/N"},
		{"1/99999999", none, Spec{}, "N in K/N"},
		// A Kubernetes Indexed Job's pod: index i is shard i+1; the count
		// must come from the command line.
		{"auto/4", env(EnvJobIndex, "0"), Spec{1, 4}, ""},
		{"auto/4", env(EnvJobIndex, "3"), Spec{4, 4}, ""},
		{"auto/4", env(EnvJobIndex, "4"), Spec{}, "from 0 to 3"},
		{"auto/4", env(EnvJobIndex, "-1"), Spec{}, "from 0 to 3"},
		{"auto", env(EnvJobIndex, "2"), Spec{}, "give auto/N"},
		// A Slurm array: --array=1-4, --array=0-3, --array=0-6:2.
		{"auto", slurm("1", "4", "1", "4"), Spec{1, 4}, ""},
		{"auto", slurm("4", "4", "1", "4"), Spec{4, 4}, ""},
		{"auto", slurm("0", "4", "0", "3"), Spec{1, 4}, ""},
		{"auto/4", slurm("2", "4", "0", "3"), Spec{3, 4}, ""},
		// auto/N under Slurm: the task ID is the shard's index from 0, as
		// Kubernetes', so that a task resubmitted alone (sbatch --array=2:
		// COUNT 1, MIN = MAX = 2) is still shard 3 of 4.
		{"auto/4", slurm("2", "1", "2", "2"), Spec{3, 4}, ""},
		{"auto/4", slurm("0", "2", "0", "3"), Spec{1, 4}, ""}, // --array=0,3
		{"auto/4", slurm("3", "2", "0", "3"), Spec{4, 4}, ""},
		{"auto/5", slurm("2", "4", "0", "3"), Spec{3, 5}, ""},
		{"auto/4", slurm("4", "1", "4", "4"), Spec{}, "from 0 to 3"},
		{"auto/4", slurm("1", "4", "1", "4"), Spec{}, "--array=0-3"}, // the whole array, from 1
		{"auto/3", slurm("2", "4", "0", "3"), Spec{}, "has 4 tasks, more than"},
		{"auto", env(EnvSlurmTask, "4", EnvSlurmCount, "4", EnvSlurmMin, "0", EnvSlurmMax, "6", EnvSlurmStep, "2"), Spec{3, 4}, ""},
		{"auto", slurm("4", "3", "1", "9"), Spec{}, "one range"},  // --array=1,4,9
		{"auto", slurm("7", "4", "1", "4"), Spec{}, "not a task"}, // outside
		{"auto", env(EnvSlurmTask, "1"), Spec{}, "is this a Slurm job array"},
		{"auto", env(EnvSlurmTask, "1", EnvJobIndex, "0"), Spec{}, "both"},
		{"auto", none, Spec{}, "neither"},
	} {
		got, err := Parse(c.flag, c.getenv)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.flag, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Parse(%q) = %v, %v; want an error with %q", c.flag, got, err, c.err)
		case c.err == "" && got != c.want:
			t.Errorf("Parse(%q) = %v, want %v", c.flag, got, c.want)
		}
	}
}

// randomText makes a file's bytes: lines of random lengths, blank lines,
// \r\n ends, multi-byte characters, with or without a final newline.
func randomText(r *rand.Rand) []byte {
	var b bytes.Buffer
	lines := r.IntN(40)
	for i := range lines {
		for range r.IntN(25) {
			b.WriteString([]string{"a", "é", " ", "字", "\r"}[r.IntN(5)])
		}
		if i < lines-1 || r.IntN(2) == 0 {
			b.WriteString([]string{"\n", "\r\n"}[r.IntN(2)])
		}
	}
	return b.Bytes()
}

// TestBoundsLikeSplit checks Bounds against GNU split -n l/K/N, the
// documented meaning of a shard, on random files: the same bytes for
// every K of N = 1 to 6, and so the shards tile the file.
func TestBoundsLikeSplit(t *testing.T) {
	split := testenv.Command(t, "split", "coreutils")
	r := rand.New(rand.NewPCG(7, 41))
	dir := t.TempDir()
	for it := range 60 {
		data := randomText(r)
		if it == 0 {
			data = nil
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d", it))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 6; n++ {
			var joined []byte
			for k := 1; k <= n; k++ {
				start, end, err := Bounds(bytes.NewReader(data), int64(len(data)), Spec{k, n})
				if err != nil {
					t.Fatal(err)
				}
				if start > 0 && start < end && data[start-1] != '\n' {
					t.Fatalf("%q shard %d/%d starts at %d, inside a line", data, k, n, start)
				}
				want, err := exec.Command(split, "-n", fmt.Sprintf("l/%d/%d", k, n), path).Output()
				if err != nil {
					t.Fatal(err)
				}
				if got := data[start:end]; !bytes.Equal(got, want) {
					t.Fatalf("%q shard %d/%d = bytes %d-%d %q; split -n l/%d/%d gives %q", data, k, n, start, end, got, k, n, want)
				}
				joined = append(joined, data[start:end]...)
			}
			if !bytes.Equal(joined, data) {
				t.Fatalf("%q: the %d shards join to %q", data, n, joined)
			}
		}
	}
}

// countingReader records the bytes ReadAt was asked for.
type countingReader struct {
	r    *bytes.Reader
	read int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// TestBoundsReadsEdgesOnly: finding a shard of a large file reads the
// bytes near its two edges, not the file.
func TestBoundsReadsEdgesOnly(t *testing.T) {
	line := strings.Repeat("w", 99) + "\n"
	data := []byte(strings.Repeat(line, 200_000)) // 20 MB
	cr := &countingReader{r: bytes.NewReader(data)}
	start, end, err := Bounds(cr, int64(len(data)), Spec{3, 8})
	if err != nil {
		t.Fatal(err)
	}
	if start%100 != 0 || end%100 != 0 || start != 5_000_000 || end != 7_500_000 {
		t.Errorf("shard 3/8 = %d-%d, want 5000000-7500000", start, end)
	}
	if cr.read > 2*64<<10 {
		t.Errorf("Bounds read %d bytes of %d", cr.read, len(data))
	}
}

func TestBoundsShortFile(t *testing.T) {
	// The size says more than the reader has: the file changed.
	_, _, err := Bounds(bytes.NewReader([]byte("abc")), 100, Spec{2, 2})
	if err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Errorf("err = %v, want the file is shorter", err)
	}
}
