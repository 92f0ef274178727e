package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/serve"
)

// docCommand is one command line of the documentation's code blocks.
type docCommand struct {
	file string
	line string
	args []string
}

var fence = regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")

// docCommands returns the command lines of the README's and docs/'s code
// blocks that start with prog: every line of a shell block (sh, bash), and
// the lines after a "$ " prompt in others (whose other lines are output);
// split as a shell splits them, with comments and redirections left out.
func docCommands(t *testing.T, prog string) []docCommand {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	var out []docCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range fence.FindAllStringSubmatch(string(data), -1) {
			shell := block[1] == "sh" || block[1] == "bash"
			for _, line := range strings.Split(block[2], "\n") {
				line = strings.TrimSpace(line)
				line, prompt := strings.CutPrefix(line, "$ ")
				if !strings.HasPrefix(line, prog+" ") || !shell && !prompt {
					continue
				}
				words, err := shellWords(line)
				if err != nil {
					t.Fatalf("%s: %q: %v", f, line, err)
				}
				out = append(out, docCommand{file: filepath.Base(f), line: line, args: words[1:]})
			}
		}
	}
	return out
}

// shellWords splits a command line as sh does for the quoting the docs
// use ('...', "...", backslash-free), dropping a trailing # comment and
// the redirections (< FILE, > FILE).
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			goto done
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
done:
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	var out []string
	for i := 0; i < len(words); i++ {
		if words[i] == "<" || words[i] == ">" {
			i++
			continue
		}
		out = append(out, words[i])
	}
	return out, nil
}

// TestDocCommandsParse runs every attnx command line of the README and
// docs/ through the command's own flag parsing: each names a command
// attnx has and only flags that command takes, with valid values.
func TestDocCommandsParse(t *testing.T) {
	cmds := docCommands(t, "attnx")
	if len(cmds) < 20 {
		t.Fatalf("%d attnx command lines in the docs: the extraction is broken", len(cmds))
	}
	parseOnly = true
	defer func() { parseOnly = false }()
	for _, c := range cmds {
		code, _, errOut := attnx(c.args...)
		if code != 0 {
			t.Errorf("%s: %s\n  exit %d: %s", c.file, c.line, code, strings.TrimSpace(errOut))
		}
	}
	t.Logf("%d command lines parse", len(cmds))
}

// TestReadmeServeQuickStart runs the README's serve example as a user
// pastes it: attnx serve with its flags (the model directory a demo
// export), then its curl command, which must get the translations (it got
// 415 when it sent curl's default form content type).
func TestReadmeServeQuickStart(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	curl := testenv.Command(t, "curl", "curl")
	var serveCmd, curlCmd []string
	for _, c := range docCommands(t, "attnx") {
		if c.file == "README.md" && len(c.args) > 0 && c.args[0] == "serve" {
			serveCmd = c.args
		}
	}
	for _, c := range docCommands(t, "curl") {
		if c.file == "README.md" && strings.Contains(c.line, "/v1/translate") {
			curlCmd = c.args
		}
	}
	if serveCmd == nil || curlCmd == nil {
		t.Fatalf("the README's serve example: serve %q, curl %q", serveCmd, curlCmd)
	}
	model := demoLuong(t)
	cfg, addr, err := serveConfig(serveCmd[1:])
	if err != nil {
		t.Fatalf("attnx %s: %v", strings.Join(serveCmd, " "), err)
	}
	for i := range cfg.Models {
		cfg.Models[i].Dir = model // out/demo/luong, as make demo writes it
	}
	s, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	for i, a := range curlCmd {
		curlCmd[i] = strings.Replace(a, "localhost:8080", strings.TrimPrefix(hs.URL, "http://"), 1)
	}
	if !strings.HasSuffix(addr, ":8080") {
		t.Errorf("the README serves on %s and curls localhost:8080", addr)
	}
	out, err := exec.Command(curl, append(curlCmd, "-w", "\n%{http_code}")...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	cut := strings.LastIndex(text, "\n")
	body, status := text[:max(cut, 0)], text[cut+1:]
	var resp struct {
		Results []struct {
			Text       string `json:"text"`
			Hypotheses []struct {
				Text string `json:"text"`
			} `json:"hypotheses"`
		} `json:"results"`
	}
	if err != nil || status != "200" || json.Unmarshal([]byte(body), &resp) != nil || len(resp.Results) != 1 ||
		resp.Results[0].Text != "2021-03-03" || len(resp.Results[0].Hypotheses) != 2 {
		t.Fatalf("curl %s: %v, status %s\n%s", strings.Join(curlCmd, " "), err, status, body)
	}
}

var scoreSuffix = regexp.MustCompile(`\s+\(score [^)]*\)$`)

// TestReadmeExampleOutputs runs the "$ attnx ..." examples of the README
// and of docs/guide.md (where its detail moved) on the demo models (out/demo/NAME as make demo exports them) and compares the
// translations they print with those shown under them. Scores are left
// out of the comparison: their last digits depend on the CPU's kernels.
func TestReadmeExampleOutputs(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	var data []byte
	for _, f := range []string{"../../README.md", "../../docs/guide.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	tmp := t.TempDir()
	exported := map[string]string{}
	demoDir := func(name string) string {
		if d, ok := exported[name]; ok {
			return d
		}
		d := filepath.Join(tmp, name)
		if _, err := modeldir.Export("../../testdata/demo/"+name+".pt", d, modeldir.Options{Greedy: true, Beam: true,
			SrcVocab: "../../testdata/demo/src_vocab.json", TgtVocab: "../../testdata/demo/tgt_vocab.json"}); err != nil {
			t.Fatal(err)
		}
		exported[name] = d
		return d
	}
	demoModel := regexp.MustCompile(`out/demo/([a-z]+)`)
	n := 0
	for _, block := range fence.FindAllStringSubmatch(string(data), -1) {
		lines := strings.Split(strings.TrimRight(block[2], "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			line, ok := strings.CutPrefix(lines[i], "$ attnx ")
			if !ok {
				continue
			}
			var want []string
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
				i++
				want = append(want, scoreSuffix.ReplaceAllString(lines[i], ""))
			}
			line = demoModel.ReplaceAllStringFunc(line, func(m string) string { return demoDir(demoModel.FindStringSubmatch(m)[1]) })
			args, err := shellWords(line)
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := attnx(args...)
			var got []string
			for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				got = append(got, scoreSuffix.ReplaceAllString(l, ""))
			}
			if code != 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("attnx %s: exit %d %s\n got:\n%s\n the README shows:\n%s", line, code, errOut, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no $ attnx examples in the README")
	}
	t.Logf("%d README examples print what the README shows", n)
}

// TestDecodingFlagsTable: docs/text.md's table of decoding options names
// every decoding flag of attnx translate, each with the toolkit option it
// stands for, and names no flag translate lacks.
func TestDecodingFlagsTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/text.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "The decoding options, with the toolkit options they correspond to:")
	if start < 0 {
		t.Fatal("docs/text.md has no table of decoding options")
	}
	inTable := map[string]bool{}
	for _, line := range strings.Split(doc[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(cells[1], "---") {
			continue
		}
		if strings.TrimSpace(strings.Join(cells[2:], "")) == "" {
			t.Errorf("table row %q names no toolkit option", line)
		}
		for _, f := range regexp.MustCompile(`--[a-z-]+`).FindAllString(cells[1], -1) {
			inTable[f] = true
		}
	}
	_, help, _ := attnx("help", "translate")
	for f := range inTable {
		if !strings.Contains(help, f+" ") && !strings.Contains(help, f+"[") {
			t.Errorf("the table names %s, which attnx translate does not have", f)
		}
	}
	for _, f := range []string{"--beam", "--n-best", "--max-len", "--max-len-ratio", "--min-len", "--rules", "--length-penalty", "--length-penalty-form",
		"--ban-unk", "--block-ngram-repeat", "--ignore-when-blocking", "--ratio", "--no-repeat-ngram", "--repetition-penalty", "--replace-unk", "--batch", "--batch-tokens", "--unk-penalty", "--temperature", "--max-len-a", "--sampling", "--sampling-topk", "--sampling-topp", "--seed"} {
		if !inTable[f] {
			t.Errorf("decoding flag %s is missing from docs/text.md's table", f)
		}
	}
}
