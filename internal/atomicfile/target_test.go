//go:build unix

package atomicfile

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSymlinkTargetReplaced: writing through a link replaces the link's
// target in the target's directory; the link stays a link.
func TestSymlinkTargetReplaced(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string) (path, want string)
	}{
		{"link to a file", func(t *testing.T, dir string) (string, string) {
			real := filepath.Join(dir, "real", "real.txt")
			must(t, os.MkdirAll(filepath.Dir(real), 0o755))
			must(t, os.WriteFile(real, []byte("old\n"), 0o644))
			must(t, os.Symlink("real/real.txt", filepath.Join(dir, "link.txt")))
			return filepath.Join(dir, "link.txt"), real
		}},
		{"dangling link", func(t *testing.T, dir string) (string, string) {
			must(t, os.Symlink("new.txt", filepath.Join(dir, "link.txt")))
			return filepath.Join(dir, "link.txt"), filepath.Join(dir, "new.txt")
		}},
		{"chain of links", func(t *testing.T, dir string) (string, string) {
			real := filepath.Join(dir, "real.txt")
			must(t, os.WriteFile(real, []byte("old\n"), 0o644))
			must(t, os.Symlink(real, filepath.Join(dir, "b")))
			must(t, os.Symlink("b", filepath.Join(dir, "a")))
			return filepath.Join(dir, "a"), real
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, want := c.setup(t, dir)
			if err := WriteFile(path, []byte("new\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := os.Lstat(path)
			if err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%s is no longer a symbolic link (%v, %v)", path, st.Mode(), err)
			}
			got, err := os.ReadFile(want)
			if err != nil || string(got) != "new\n" {
				t.Fatalf("target %s holds %q (%v), want %q", want, got, err, "new\n")
			}
			if got, _ := os.ReadFile(path); string(got) != "new\n" {
				t.Fatalf("reading through %s gives %q", path, got)
			}
			if n := len(names(t, filepath.Dir(want))); n == 0 {
				t.Fatal("no files")
			}
			for _, d := range []string{dir, filepath.Dir(want)} {
				for _, n := range names(t, d) {
					if strings.Contains(n, TempInfix) {
						t.Fatalf("temporary file %s left in %s", n, d)
					}
				}
			}
		})
	}
}

func TestLinkLoopAndDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Symlink("b", filepath.Join(dir, "a")))
	must(t, os.Symlink("a", filepath.Join(dir, "b")))
	if err := WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Fatalf("a link loop: got %v, want an error about symbolic links", err)
	}
	if err := WriteFile(dir, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("a directory: got %v, want 'is a directory'", err)
	}
}

// TestFIFOWrittenThrough: a FIFO is opened and written as it is, never
// replaced by a regular file.
func TestFIFOWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	must(t, syscall.Mkfifo(fifo, 0o600))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink("pipe", link))
	got := make(chan []byte, 1)
	go func() {
		// Opening for reading blocks until the writer opens too.
		f, err := os.Open(fifo)
		if err != nil {
			got <- []byte(err.Error())
			return
		}
		defer f.Close()
		var b bytes.Buffer
		b.ReadFrom(f)
		got <- b.Bytes()
	}()
	f, err := Create(link, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Through() {
		t.Fatal("a FIFO is not written straight through")
	}
	for i := 0; i < 3; i++ {
		if _, err := f.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if string(b) != "line\nline\nline\n" {
			t.Fatalf("the reader got %q", b)
		}
	case <-time.After(time.Minute):
		t.Fatal("the FIFO's reader got nothing")
	}
	st, err := os.Lstat(fifo)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer a FIFO: %v %v", fifo, st.Mode(), err)
	}
}

// TestStdoutWrittenThrough runs in a subprocess whose stdout is a file:
// "-", a link to /proc/self/fd/1 (what /dev/stdout is) and /dev/stdout
// itself are written straight through to it. The link lives in a
// temporary directory, so that a regression replaces that link, never
// the machine's own /dev/stdout; /dev/stdout itself is written only once
// the link case has shown that it is written through.
func TestStdoutWrittenThrough(t *testing.T) {
	if os.Getenv("ATTNX_ATOMICFILE_STDOUT") != "" {
		return // the subprocess's own run of this test, see below
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "stdout")
	must(t, os.Symlink("/proc/self/fd/1", link))
	run := func(path string) string {
		t.Helper()
		out := filepath.Join(dir, "out.txt")
		f, err := os.Create(out)
		must(t, err)
		defer f.Close()
		cmd := exec.Command(exe, "-test.run=^TestStdoutHelper$")
		cmd.Env = append(os.Environ(), "ATTNX_ATOMICFILE_STDOUT="+path)
		cmd.Stdout = f
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("writing %s in a subprocess: %v\n%s", path, err, stderr.Bytes())
		}
		got, err := os.ReadFile(out)
		must(t, err)
		return string(got)
	}
	for _, path := range []string{Stdout, link} {
		if got := run(path); !strings.Contains(got, "through stdout\n") {
			t.Fatalf("writing %s: stdout got %q", path, got)
		}
	}
	st, err := os.Lstat(link)
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link to /proc/self/fd/1 was replaced: %v %v", st.Mode(), err)
	}
	if _, err := os.Lstat("/dev/stdout"); err != nil {
		return // no /dev/stdout on this system
	}
	if got := run("/dev/stdout"); !strings.Contains(got, "through stdout\n") {
		t.Fatalf("writing /dev/stdout: stdout got %q", got)
	}
}

// TestStdoutHelper is the subprocess of TestStdoutWrittenThrough.
func TestStdoutHelper(t *testing.T) {
	path := os.Getenv("ATTNX_ATOMICFILE_STDOUT")
	if path == "" {
		t.Skip("run by TestStdoutWrittenThrough")
	}
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Through() {
		f.Discard()
		t.Fatalf("%s would be replaced, not written through", path)
	}
	if _, err := f.Write([]byte("through stdout\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "test.src")
	must(t, os.WriteFile(src, []byte("a\n"), 0o644))
	must(t, os.Symlink("test.src", filepath.Join(dir, "link")))
	must(t, os.Link(src, filepath.Join(dir, "hard")))
	other := filepath.Join(dir, "other")
	must(t, os.WriteFile(other, []byte("b\n"), 0o644))
	for _, c := range []struct {
		out     string
		refused bool
	}{
		{src, true},
		{filepath.Join(dir, "link"), true},
		{filepath.Join(dir, "hard"), true},
		{filepath.Join(dir, ".", "test.src"), true},
		{other, false},
		{filepath.Join(dir, "missing"), false},
		{Stdout, false},
	} {
		err := SameFile(c.out, "", src)
		if (err != nil) != c.refused {
			t.Errorf("SameFile(%s, %s) = %v, refused want %v", c.out, src, err, c.refused)
		}
		if err != nil && !strings.Contains(err.Error(), c.out) {
			t.Errorf("the error %q does not name the output %s", err, c.out)
		}
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Symlink("sub/real", filepath.Join(dir, "link")))
	for in, want := range map[string]string{
		filepath.Join(dir, "link"):  filepath.Join(dir, "sub/real"),
		filepath.Join(dir, "plain"): filepath.Join(dir, "plain"),
		"/dev/stdout":               "/dev/stdout",
		Stdout:                      Stdout,
	} {
		got, err := Resolve(in)
		if err != nil || got != want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSameFileStdin: an input "-" is standard input, checked through its
// file: `attnx translate --src - --output g.txt < g.txt` replaced g.txt.
func TestSameFileStdin(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "g.txt")
	must(t, os.WriteFile(src, []byte("a\n"), 0o644))
	other := filepath.Join(dir, "other.txt")
	must(t, os.WriteFile(other, []byte("b\n"), 0o644))
	f, err := os.Open(src)
	must(t, err)
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	if err := SameFile(src, Stdout); err == nil || !strings.Contains(err.Error(), "the output "+src+" is the input standard input") {
		t.Errorf("output g.txt with standard input from g.txt: %v", err)
	}
	if err := SameFile(other, Stdout); err != nil {
		t.Errorf("output other.txt with standard input from g.txt: %v", err)
	}
}
