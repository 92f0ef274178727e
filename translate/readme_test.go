package translate_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
)

// goBlocks returns the ```go blocks of the section of the Markdown file
// path that starts at the heading line head and ends at the next heading
// of its level.
func goBlocks(t *testing.T, path, head string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "\n"+head+"\n")
	if i < 0 {
		t.Fatalf("%s has no section %q", path, head)
	}
	section := text[i+len(head)+2:]
	level := head[:strings.IndexByte(head, ' ')+1]
	if j := strings.Index(section, "\n"+level); j >= 0 {
		section = section[:j]
	}
	var blocks []string
	for {
		a := strings.Index(section, "```go\n")
		if a < 0 {
			return blocks
		}
		section = section[a+len("```go\n"):]
		b := strings.Index(section, "\n```")
		if b < 0 {
			t.Fatalf("%s, %s: a ```go block is not closed", path, head)
		}
		blocks = append(blocks, section[:b+1])
		section = section[b+4:]
	}
}

// buildProgram writes src as the main package of a module outside attnx
// that requires attnx (a replace directive to this checkout, the
// module's go.sum, no network: GOPROXY=off) and builds it, as a user's
// program would be built; it returns the binary.
func buildProgram(t *testing.T, name, src string) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go command", "install Go (go.mod's version)", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module example.com/" + name + "\n\ngo 1.26\n\nrequire github.com/attnx/attnx v0.0.0\n\nreplace github.com/attnx/attnx => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command(goCmd, "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: go build: %v\n%s\n%s", name, err, out, src)
	}
	return bin
}

// runProgram runs bin with args and stdin, and returns its exit status,
// standard output and standard error.
func runProgram(t *testing.T, bin string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// readmeFixtures are the toolkit models of testdata/toolkits whose
// translate command's own output at its defaults the README's program
// must give: checkpoint, test set, the toolkit's lines.
var readmeFixtures = []struct{ dir, ckpt, test, want string }{
	{"onmt-sp", "model.pt", "test.src", "default.txt"},
	{"onmt-bpe", "model.pt", "test.src", "default.txt"},
	{"onmt-st", "model_step_2001.pt", "test.src", "default.txt"},
	{"onmt-tok-bpe", "model.pt", "test.src", "default.txt"},
	{"onmt-tok-sp", "model.pt", "test.src", "default.txt"},
	{"joey-sp", "model/best.ckpt", "test.en", "greedy.txt"},
	{"joey-bpe", "model/best.ckpt", "test.en", "greedy.txt"},
	{"fairseq-lstm", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-bi2", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-wiseman", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-luong", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-shared", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-noatt", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-long", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-spm", "checkpoint_best.pt", "test.raw.en", "default.txt"},
	{"fairseq-moses", "checkpoint_best.pt", "test.raw.en", "default.txt"},
}

// TestREADMEProgram builds the README's Go section, a whole program, as a
// module outside attnx, and runs it as its user would: on every toolkit
// model of testdata, exported with no options, the test set on its
// standard input gives the toolkit's own lines (joey-sp 44 of 48 lines,
// onmt-bpe 47 of 48 and onmt-tok-bpe 37 of 38 before Translate took the
// toolkit's output limits), each with a score, and a blank line a blank
// one; its branches on the error classes hold: a model directory that
// does not exist (fs.ErrNotExist), a line that is not UTF-8 (a
// *RequestError naming the row).
func TestREADMEProgram(t *testing.T) {
	blocks := goBlocks(t, "../README.md", "## Go")
	if len(blocks) != 1 {
		t.Fatalf("README.md's Go section has %d go blocks; want the one program", len(blocks))
	}
	bin := buildProgram(t, "readme", blocks[0])

	if code, out, errOut := runProgram(t, bin, "", filepath.Join(t.TempDir(), "none")); code != 3 || out != "" || !strings.Contains(errOut, "no model there: translate: model directory") {
		t.Errorf("a missing model directory: exit %d, %q, %q; want the fs.ErrNotExist branch (exit 3)", code, out, errOut)
	}
	for _, f := range readmeFixtures {
		t.Run(f.dir, func(t *testing.T) {
			src := filepath.Join("..", "testdata", "toolkits", f.dir)
			model := filepath.Join(t.TempDir(), "m")
			if _, err := modeldir.Export(filepath.Join(src, f.ckpt), model, modeldir.Options{}); err != nil {
				t.Fatal(err)
			}
			test, err := os.ReadFile(filepath.Join(src, f.test))
			if err != nil {
				t.Fatal(err)
			}
			wantData, err := os.ReadFile(filepath.Join(src, "expected", f.want))
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimSuffix(string(wantData), "\n"), "\n")
			// A blank line after the test set gets a blank line.
			code, out, errOut := runProgram(t, bin, string(test)+"\n", model)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(got) != len(want)+1 {
				t.Fatalf("%d lines out for %d in and a blank one", len(got), len(want))
			}
			same := 0
			for i, line := range got[:len(want)] {
				text, score, ok := strings.Cut(line, "\t")
				s, err := strconv.ParseFloat(score, 32)
				switch {
				case !ok || err != nil || s >= 0:
					t.Errorf("line %d: %q: want the text, a tab and a negative log-probability", i+1, line)
				case text != want[i]:
					t.Errorf("line %d: %q, the toolkit %q", i+1, text, want[i])
				default:
					same++
				}
			}
			if blank := got[len(want)]; blank != "\t0.0000" {
				t.Errorf("the blank line: %q; want the zero Result's", blank)
			}
			t.Logf("%s: %d of %d lines the toolkit's", f.dir, same, len(want))
			// Line 2 is not UTF-8: the *RequestError branch names it.
			lines := strings.SplitN(string(test), "\n", 3)
			code, out, errOut = runProgram(t, bin, lines[0]+"\n\xff"+lines[1]+"\n", model)
			if code != 4 || out != "" || !strings.HasPrefix(errOut, "line 2: translate: input row 1: invalid UTF-8 at byte 0") {
				t.Errorf("a line that is not UTF-8: exit %d, %q, %q; want the *RequestError branch (exit 4) naming line 2", code, out, errOut)
			}
		})
	}
}

// TestGuideGoPrograms builds each Go block of docs/guide.md's "Go API"
// section, whole programs, as a module outside attnx: the guide's
// examples compile against the API as it is.
func TestGuideGoPrograms(t *testing.T) {
	blocks := goBlocks(t, "../docs/guide.md", "## Go API")
	if len(blocks) < 2 {
		t.Fatalf("docs/guide.md's Go API section has %d go blocks; want its programs", len(blocks))
	}
	for i, b := range blocks {
		buildProgram(t, "guide"+strconv.Itoa(i+1), b)
	}
}
