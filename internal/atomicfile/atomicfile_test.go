package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// names lists a directory's entries (Glob's "*" matches dot files too).
func names(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

func TestWriteFile(t *testing.T) {
	umask := currentUmask()
	for _, c := range []struct {
		name string
		old  []byte // nil: no file before
		data []byte
		perm os.FileMode
	}{
		{"new file", nil, []byte("hello\n"), 0o644},
		{"replaces a file", []byte("a much longer previous content"), []byte("short"), 0o644},
		{"empty content", []byte("x"), []byte{}, 0o600},
		{"private", nil, bytes.Repeat([]byte{7}, 1<<20), 0o600},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.bin")
			if c.old != nil {
				if err := os.WriteFile(p, c.old, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(p, c.data, c.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, c.data) {
				t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(c.data))
			}
			st, _ := os.Stat(p)
			if want := c.perm &^ umask; st.Mode().Perm() != want {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), want)
			}
			if got := names(t, dir); len(got) != 1 || got[0] != "f.bin" {
				t.Errorf("directory holds %v, want only f.bin", got)
			}
		})
	}
}

// TestFailuresLeaveDestinationUnchanged: every way a write can fail leaves
// the old file (or no file) and no temporary file.
func TestFailuresLeaveDestinationUnchanged(t *testing.T) {
	injected := errors.New("injected")
	for _, c := range []struct {
		name    string
		setup   func(t *testing.T, p string) // makes the destination
		write   func(w io.Writer) error
		wantErr string
		check   func(t *testing.T, p string)
	}{
		{
			name:    "writer fails",
			setup:   func(t *testing.T, p string) { os.WriteFile(p, []byte("old"), 0o644) },
			write:   func(w io.Writer) error { w.Write([]byte("partial")); return injected },
			wantErr: "injected",
			check: func(t *testing.T, p string) {
				if b, _ := os.ReadFile(p); string(b) != "old" {
					t.Errorf("destination holds %q, want the old content", b)
				}
			},
		},
		{
			name:    "destination is a directory",
			setup:   func(t *testing.T, p string) { os.MkdirAll(filepath.Join(p, "keep"), 0o755) },
			write:   func(w io.Writer) error { _, err := w.Write([]byte("new")); return err },
			wantErr: "writing ",
			check: func(t *testing.T, p string) {
				if _, err := os.Stat(filepath.Join(p, "keep")); err != nil {
					t.Errorf("the directory in the way changed: %v", err)
				}
			},
		},
		{
			name:    "missing parent",
			setup:   func(t *testing.T, p string) {},
			write:   func(w io.Writer) error { return nil },
			wantErr: "writing ",
			check:   func(t *testing.T, p string) {},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if c.name == "missing parent" {
				p = filepath.Join(dir, "no", "f")
			}
			c.setup(t, p)
			before := names(t, dir)
			err := Write(p, 0o644, c.write)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, p, c.wantErr)
			}
			c.check(t, p)
			if after := names(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Errorf("directory holds %v after the failure, had %v", after, before)
			}
		})
	}
}

func TestCommitAs(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "data"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Discard()
	if !strings.HasPrefix(filepath.Base(f.TempName()), ".data"+TempInfix) {
		t.Errorf("temporary name %s, want .data%s*", f.TempName(), TempInfix)
	}
	fmt.Fprint(f, "content")
	if err := f.CommitAs(filepath.Join(dir, "sub", "x")); err == nil || !strings.Contains(err.Error(), "not in the directory") {
		t.Errorf("committing to another directory: %v", err)
	}
	if err := f.CommitAs(filepath.Join(dir, "data.1234")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil {
		t.Error("a second commit succeeded")
	}
	f.Discard() // no-op after a commit
	if got := strings.Join(names(t, dir), ","); got != "data.1234" {
		t.Errorf("directory holds %s, want data.1234", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "data.1234")); string(b) != "content" {
		t.Errorf("content %q", b)
	}
}

func TestDiscard(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "x"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, "abandoned")
	f.Discard()
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("directory holds %v after Discard", got)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Discard succeeded")
	}
}

// TestConcurrentReadersSeeWholeFiles: while writers replace the file with
// contents of different sizes, every read returns one of them whole.
func TestConcurrentReadersSeeWholeFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	contents := make([][]byte, 4)
	for i := range contents {
		contents[i] = bytes.Repeat([]byte{byte('a' + i)}, (i+1)*64<<10)
	}
	if err := WriteFile(p, contents[0], 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				if err := WriteFile(p, contents[(i+w)%len(contents)], 0o644); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	var reads int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(p)
			if err != nil {
				errs <- err
				return
			}
			reads++
			whole := false
			for _, c := range contents {
				whole = whole || bytes.Equal(b, c)
			}
			if !whole {
				errs <- fmt.Errorf("read %d bytes that are none of the written contents", len(b))
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := names(t, dir); len(got) != 1 {
		t.Errorf("directory holds %v", got)
	}
	t.Logf("%d reads, all whole", reads)
}

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Error(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if err := SyncDir(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("syncing a missing directory: %v", err)
	}
}

func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "atomicfile-example-")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "report.json")
	if err := WriteFile(p, []byte(`{"ok": true}`+"\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(p)
	fmt.Print(string(b))
	// Output: {"ok": true}
}
