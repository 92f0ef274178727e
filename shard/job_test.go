package shard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// TestOrderer puts sentences in several orders, with several memory
// budgets: the bytes come out in the file's order, the memory held never
// passes the budget, and what does not fit waits in the spill file.
func TestOrderer(t *testing.T) {
	const n = 200
	sentence := func(i int) []byte { return []byte(fmt.Sprintf("%d %s\n", i, strings.Repeat("x", i%13))) }
	var want bytes.Buffer
	for i := range n {
		want.Write(sentence(i))
	}
	shuffled := rand.New(rand.NewPCG(1, 2)).Perm(n)
	reversed := make([]int, n)
	for i := range reversed {
		reversed[i] = n - 1 - i
	}
	inOrder := make([]int, n)
	for i := range inOrder {
		inOrder[i] = i
	}
	for _, c := range []struct {
		name    string
		order   []int
		maxHeld int64
		spills  bool
	}{
		{"in order, nothing held", inOrder, -1, false},
		{"reversed, nothing held", reversed, -1, true},
		{"reversed, all in memory", reversed, 1 << 20, false},
		{"shuffled, 100 bytes", shuffled, 100, true},
		{"shuffled, nothing held", shuffled, -1, true},
		{"shuffled, all in memory", shuffled, 1 << 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var got bytes.Buffer
			var written []int
			o := newOrderer(&got, n, c.maxHeld, dir, func(i int) { written = append(written, i) })
			for _, i := range c.order {
				if err := o.put(i, sentence(i)); err != nil {
					t.Fatal(err)
				}
				if o.heldBytes > max(c.maxHeld, 0) {
					t.Fatalf("after sentence %d: %d bytes held, budget %d", i, o.heldBytes, c.maxHeld)
				}
			}
			if err := o.finish(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("out of order:\n%.200s\nwant\n%.200s", got.String(), want.String())
			}
			if !slices.Equal(written, inOrder) {
				t.Errorf("written hook heard %v, want 0 to %d in order", written[:min(len(written), 10)], n-1)
			}
			if (o.spilled > 0) != c.spills || o.peakHeld > max(c.maxHeld, 0) {
				t.Errorf("spilled %d sentences, peak held %d bytes (budget %d): want spills %v", o.spilled, o.peakHeld, c.maxHeld, c.spills)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("the spill file is left in the folder: %v", left)
			}
		})
	}
	o := newOrderer(io.Discard, 3, 10, t.TempDir(), nil)
	for _, i := range []int{2, 2} {
		err := o.put(i, []byte("a\n"))
		if i == 2 && err != nil && !strings.Contains(err.Error(), "sentence 3 of 3 written twice") {
			t.Errorf("sentence 3 twice: %v", err)
		}
	}
	if err := o.finish(); err == nil || !strings.Contains(err.Error(), "sentence 1 of 3 never came") {
		t.Errorf("sentences missing: %v, want an error naming sentence 1", err)
	}
}

// demoTranslator opens the trained demo model (Luong, character-level
// dates), exported as make demo exports it.
func demoTranslator(t *testing.T) *translate.Translator {
	t.Helper()
	model := filepath.Join(t.TempDir(), "luong")
	if _, err := modeldir.Export("../testdata/demo/luong.pt", model, modeldir.Options{Greedy: true,
		SrcVocab: "../testdata/demo/src_vocab.json", TgtVocab: "../testdata/demo/tgt_vocab.json"}); err != nil {
		t.Fatal(err)
	}
	tr, err := translate.Open(model, translate.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// datesCorpus writes n of the demo's held-out dates, with blank lines
// among them.
func datesCorpus(t *testing.T, n int) string {
	t.Helper()
	data, err := os.ReadFile("../testdata/demo/heldout.txt")
	if err != nil {
		t.Fatal(err)
	}
	var dates []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		s, _, _ := strings.Cut(l, "\t")
		dates = append(dates, s)
	}
	var b strings.Builder
	for i := range n {
		if i%97 == 5 {
			b.WriteString("\n")
			continue
		}
		b.WriteString(dates[(i*7)%len(dates)] + "\n")
	}
	src := filepath.Join(t.TempDir(), "dates.txt")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return src
}

// TestJobStreams translates shards of 300 and 3,000 sentences through
// Job.Translate with a 2 KiB budget for results held in memory: each part
// is byte for byte what translating the same lines in order (the results
// held until their turn, as before) writes, the memory held stays within
// the budget whatever the number of sentences (the rest waited in the
// spill file), the record makes the shard done, and merge accepts it.
func TestJobStreams(t *testing.T) {
	tr := demoTranslator(t)
	write := func(w io.Writer, i int, res translate.Result) error {
		_, err := fmt.Fprintf(w, "%s\t%v\n", res.Text, res.Tokens)
		return err
	}
	const budget = 2 << 10
	for _, n := range []int{300, 3000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := datesCorpus(t, n)
			data, _ := os.ReadFile(src)
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			co := translate.CorpusOptions{BatchSize: 16, Lanes: 2, WithoutAttention: true}
			var want bytes.Buffer
			if _, err := tr.TranslateCorpus(context.Background(), lines, 1, co, func(i int, res translate.Result) error {
				return write(&want, i, res)
			}, nil); err != nil {
				t.Fatal(err)
			}

			out := filepath.Join(t.TempDir(), "out", "dates.hyp")
			spec := Spec{K: 1, N: 1}
			j, err := OpenJob(JobConfig{Source: src, Output: out, Spec: spec, Fields: testFields("a"), LinesPerSentence: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if j.Done || len(j.Lines) != n {
				t.Fatalf("a new shard: done %v, %d lines, want not done and %d", j.Done, len(j.Lines), n)
			}
			written := 0
			st, err := j.Translate(context.Background(), tr, TranslateOptions{Corpus: co, Write: write, MaxHeldBytes: budget,
				Written: func(i int) {
					if i != written {
						t.Errorf("sentence %d written after %d others", i, written)
					}
					written++
				}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(j.Part)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("streamed part differs from the ordered translation:\n%.300s\nwant\n%.300s", got, want.Bytes())
			}
			if st.PeakHeldBytes > budget || st.Spilled == 0 || written != n {
				t.Errorf("peak %d bytes held (budget %d), %d spilled, %d written: want within the budget, some spilled, all %d written", st.PeakHeldBytes, budget, st.Spilled, written, n)
			}
			if done, why, err := Finished(j.Part, j.Record()); !done || err != nil {
				t.Errorf("not finished after Translate: %s %v", why, err)
			}
			m, err := Merge(out, MergeOptions{})
			if err != nil || m.Sentences != n {
				t.Fatalf("merge: %+v %v", m, err)
			}
			if merged, _ := os.ReadFile(out); !bytes.Equal(merged, want.Bytes()) {
				t.Error("merged output differs from the ordered translation")
			}
		})
	}
}

// TestJobFailsCleanly stops a shard's translation halfway through (its
// writer fails): no part and no record are left, so merge has nothing to
// accept, and the spill file is gone.
func TestJobFailsCleanly(t *testing.T) {
	tr := demoTranslator(t)
	src := datesCorpus(t, 400)
	out := filepath.Join(t.TempDir(), "dates.hyp")
	j, err := OpenJob(JobConfig{Source: src, Output: out, Spec: Spec{K: 2, N: 2}, Fields: testFields("a"), LinesPerSentence: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	count := 0
	_, err = j.Translate(context.Background(), tr, TranslateOptions{MaxHeldBytes: -1, Write: func(w io.Writer, i int, res translate.Result) error {
		if count++; count == 150 {
			return fmt.Errorf("disk full")
		}
		_, err := fmt.Fprintln(w, res.Text)
		return err
	}})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err %v, want the writer's", err)
	}
	if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 0 {
		t.Errorf("a failed shard left %v", left)
	}
	// A writer that writes two lines for a sentence of one is refused.
	_, err = j.Translate(context.Background(), tr, TranslateOptions{Write: func(w io.Writer, i int, res translate.Result) error {
		_, err := fmt.Fprintf(w, "%s\n\n", res.Text)
		return err
	}})
	if err == nil || !strings.Contains(err.Error(), "written as 2 lines, want 1") {
		t.Errorf("two lines a sentence: %v", err)
	}
}
