package leaktest_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/leaktest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// TestTranslatorLeavesNoGoroutine is the check a user's goleak test makes:
// a model OpenNMT-py trained (testdata/toolkits/onmt-bpe), exported, opened
// with zero Options (the native evaluator), translating its test set,
// runs attnx goroutines (the kernels' helpers, the idle-buffer watcher);
// once the last Translator is closed none is left, on each backend. Two
// Translators open at once: closing the first keeps the second working; a
// Scheduler of the second, left open, ends with it.
func TestTranslatorLeavesNoGoroutine(t *testing.T) {
	if g := leaktest.Wait(10 * time.Second); len(g) != 0 {
		t.Fatalf("attnx goroutines before the test:\n%s", strings.Join(g, "\n\n"))
	}
	src := filepath.Join("..", "..", "testdata", "toolkits", "onmt-bpe")
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export(filepath.Join(src, "model.pt"), dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, filepath.Join(src, "test.src"))[:8]
	for _, backend := range []string{"", onnxrun.BackendORT} {
		t.Run("backend="+backend, func(t *testing.T) {
			if backend == onnxrun.BackendORT {
				if !onnxrun.HasORT {
					t.Skip("a build without cgo has no ONNX Runtime")
				}
				testenv.ORT(t, onnxrun.Init())
			}
			opt := translate.Options{Backend: backend}
			first, err := translate.Open(dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			second, err := translate.Open(dir, opt)
			if err != nil {
				first.Close()
				t.Fatal(err)
			}
			ctx := context.Background()
			want, err := first.Translate(ctx, lines)
			if err != nil {
				t.Fatal(err)
			}
			if len(leaktest.Goroutines("internal/idlemem.watch(")) == 0 {
				t.Error("no idle-buffer watcher while two Translators are open: the check below would prove nothing")
			}
			// No garbage collection from here on: a model collected
			// unclosed releases what it held through a cleanup, which
			// would hide a Close that does not.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := second.Translate(ctx, lines)
			if err != nil {
				t.Fatalf("the second Translator after the first closed: %v", err)
			}
			// A Scheduler left open: the Translator's Close ends it.
			sched, err := second.NewScheduler(translate.SchedulerConfig{})
			if err != nil {
				t.Fatal(err)
			}
			viaSched, err := sched.Translate(ctx, lines, translate.CallOptions{})
			if err != nil {
				t.Fatalf("the Scheduler: %v", err)
			}
			for i := range want {
				if got[i].Text != want[i].Text || got[i].Text == "" {
					t.Errorf("line %d: %q after the first Translator closed, %q before", i+1, got[i].Text, want[i].Text)
				}
				if viaSched[i].Text == "" {
					t.Errorf("line %d: the Scheduler gave no text", i+1)
				}
			}
			if err := second.Close(); err != nil {
				t.Fatal(err)
			}
			if g := leaktest.Wait(10 * time.Second); len(g) != 0 {
				t.Errorf("%d attnx goroutines left 10 s after the last Close:\n%s", len(g), strings.Join(g, "\n\n"))
			}
			// Alive until here: Close, not the collector, ended them.
			runtime.KeepAlive(first)
			runtime.KeepAlive(second)
		})
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
