//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTranslateOutputPaths: --output through a symbolic link replaces the
// link's target; a FIFO and stdout (by "-" and by a link to
// /proc/self/fd/1, which is what /dev/stdout is) are written straight
// through; the test set as its own output is refused before anything is
// read or written.
func TestTranslateOutputPaths(t *testing.T) {
	model := translateTestModel(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "test.src")
	if err := os.WriteFile(src, []byte("abc\nhello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, want, errOut := attnx("translate", "--model", model, "--src", src)
	if code != 0 || strings.Count(want, "\n") != 2 {
		t.Fatalf("translate --src: exit %d, %q\n%s", code, want, errOut)
	}

	t.Run("symlink", func(t *testing.T) {
		real := filepath.Join(tmp, "out", "real.txt")
		os.MkdirAll(filepath.Dir(real), 0o755)
		os.WriteFile(real, []byte("old\n"), 0o644)
		link := filepath.Join(tmp, "link.txt")
		if err := os.Symlink("out/real.txt", link); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := attnx("translate", "--model", model, "--src", src, "--output", link); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("link.txt is no longer a link: %v %v", st.Mode(), err)
		}
		if got, _ := os.ReadFile(real); string(got) != want {
			t.Fatalf("the link's target holds %q, want %q", got, want)
		}
	})

	t.Run("same file", func(t *testing.T) {
		link := filepath.Join(tmp, "src-link")
		os.Symlink("test.src", link)
		for _, out := range []string{src, link} {
			code, _, errOut := attnx("translate", "--model", model, "--src", src, "--output", out)
			if code != 2 || !strings.Contains(errOut, "--output: the output "+out+" is the input "+src) {
				t.Errorf("--src %s --output %s: exit %d, %q; want a usage error naming both", src, out, code, errOut)
			}
		}
		if got, _ := os.ReadFile(src); string(got) != "abc\nhello\n" {
			t.Fatalf("the test set now holds %q", got)
		}
	})

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(tmp, "pipe")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- err.Error()
				return
			}
			defer f.Close()
			var b bytes.Buffer
			b.ReadFrom(f)
			got <- b.String()
		}()
		if code, _, errOut := attnx("translate", "--model", model, "--src", src, "--output", fifo); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("the FIFO's reader got %q, want %q", g, want)
			}
		case <-time.After(time.Minute):
			t.Fatal("nothing came through the FIFO")
		}
		if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Fatalf("the FIFO was replaced: %v %v", st.Mode(), err)
		}
	})

	t.Run("stdout", func(t *testing.T) {
		link := filepath.Join(tmp, "stdout")
		if err := os.Symlink("/proc/self/fd/1", link); err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{"-", link} {
			args, _ := json.Marshal([]string{"translate", "--model", model, "--src", src, "--output", out})
			res := filepath.Join(tmp, "stdout.txt")
			f, err := os.Create(res)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestBadInputHelperProcess$")
			cmd.Env = append(os.Environ(), "ATTNX_BADINPUT_ARGS="+string(args))
			cmd.Stdout = f
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err = cmd.Run()
			f.Close()
			if err != nil {
				t.Fatalf("--output %s: %v\n%s", out, err, errb.String())
			}
			if got, _ := os.ReadFile(res); string(got) != want {
				t.Errorf("--output %s: stdout got %q, want %q", out, got, want)
			}
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link to /proc/self/fd/1 was replaced: %v %v", st.Mode(), err)
		}
	})
}
