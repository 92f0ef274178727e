package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/shard"
)

// demoLuong exports the trained demo model (Luong, character-level dates),
// as make demo does.
func demoLuong(t *testing.T) string {
	t.Helper()
	model := filepath.Join(t.TempDir(), "luong")
	if _, err := modeldir.Export("../../testdata/demo/luong.pt", model, modeldir.Options{Greedy: true,
		SrcVocab: "../../testdata/demo/src_vocab.json", TgtVocab: "../../testdata/demo/tgt_vocab.json"}); err != nil {
		t.Fatal(err)
	}
	return model
}

// shardCorpus writes a test set of the demo's held-out dates, repeated
// to n lines, with blank lines and a \r\n line among them.
func shardCorpus(t *testing.T, n int) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/demo/heldout.txt")
	if err != nil {
		t.Fatal(err)
	}
	var src []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		s, _, _ := strings.Cut(l, "\t")
		src = append(src, s)
	}
	var b strings.Builder
	for i := range n {
		switch {
		case i%97 == 5:
			b.WriteString("\n")
		case i%211 == 7:
			b.WriteString(src[i%len(src)] + "\r\n")
		default:
			b.WriteString(src[i%len(src)] + "\n")
		}
	}
	path := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestShardHelperProcess runs attnx's main with ATTNX_SHARD_ARGS (JSON);
// with ATTNX_STALL_AFTER=I it stops for good once sentence I of its test
// set is written, after creating the file ATTNX_STALLED, so that a test
// can kill it mid-shard.
func TestShardHelperProcess(t *testing.T) {
	args := os.Getenv("ATTNX_SHARD_ARGS")
	if args == "" {
		t.Skip("helper process for the shard tests")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(99)
	}
	if s := os.Getenv("ATTNX_STALL_AFTER"); s != "" {
		at, _ := strconv.Atoi(s)
		corpusEmitted = func(i int) {
			if i == at {
				os.WriteFile(os.Getenv("ATTNX_STALLED"), nil, 0o644)
				select {}
			}
		}
	}
	os.Exit(run(argv))
}

// shardProcess starts attnx with args in a process of its own, with env
// added to its environment.
func shardProcess(t *testing.T, args []string, env ...string) *exec.Cmd {
	t.Helper()
	argv, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestShardHelperProcess$")
	cmd.Env = append(append(os.Environ(), "ATTNX_SHARD_ARGS="+string(argv)), env...)
	return cmd
}

// TestTranslateShards translates a test set in one run and in 4 shards run
// as a Kubernetes Indexed Job runs them (4 processes, each with its
// JOB_COMPLETION_INDEX and --shard auto/4): the merged output is the one
// run's, byte for byte. Shard 2's process is killed halfway through
// first; it leaves no part, and when the Job's pods run again the 3
// finished shards are skipped and shard 2 alone is translated.
func TestTranslateShards(t *testing.T) {
	model := demoLuong(t)
	src := shardCorpus(t, 2400)
	dir := t.TempDir()
	one := filepath.Join(dir, "one.txt")
	if code, _, errs := attnx("translate", "--model", model, "--src", src, "--output", one); code != 0 {
		t.Fatalf("one run: %s", errs)
	}
	out := filepath.Join(dir, "sharded.txt")
	args := []string{"translate", "--model", model, "--src", src, "--output", out, "--shard", "auto/4", "--threads", "1"}

	// Shard 2/4 (index 1) killed once it has written sentence 100.
	stalled := filepath.Join(dir, "stalled")
	cmd := shardProcess(t, args, shard.EnvJobIndex+"=1", "ATTNX_STALL_AFTER=100", "ATTNX_STALLED="+stalled)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(stalled); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("shard 2/4 never reached sentence 100")
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	part2 := shard.Part(out, shard.Spec{K: 2, N: 4})
	for _, p := range []string{part2, shard.RecordFile(part2)} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the killed shard left %s", p)
		}
	}
	if code, _, errs := attnx("merge", out); code != 1 || !strings.Contains(errs, "no finished shards") {
		t.Errorf("merge with no shard finished: exit %d, %q", code, errs)
	}

	// The Job's 4 pods, at the same time; then the Job retried.
	runAll := func() []string {
		cmds := make([]*exec.Cmd, 4)
		logs := make([]strings.Builder, 4)
		for i := range cmds {
			cmds[i] = shardProcess(t, args, fmt.Sprintf("%s=%d", shard.EnvJobIndex, i))
			cmds[i].Stderr = &logs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		var out []string
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatalf("shard %d/4: %v\n%s", i+1, err, logs[i].String())
			}
			out = append(out, logs[i].String())
		}
		return out
	}
	first := runAll()
	for i, log := range first {
		if strings.Contains(log, "skipped") || !strings.Contains(log, fmt.Sprintf("-> %s", shard.Part(out, shard.Spec{K: i + 1, N: 4}))) {
			t.Errorf("shard %d/4, first run: %s", i+1, log)
		}
	}
	os.Remove(part2)
	os.Remove(shard.RecordFile(part2))
	again := runAll()
	for i, log := range again {
		if skipped := strings.Contains(log, "is done already") && strings.Contains(log, "skipped"); skipped != (i != 1) {
			t.Errorf("shard %d/4, run again with shard 2's part lost: skipped %v: %s", i+1, skipped, log)
		}
	}
	code, _, errs := attnx("merge", out)
	if code != 0 || !strings.Contains(errs, "4 shards of "+src+", 2400 sentences, 2400 lines") {
		t.Fatalf("merge: exit %d, %s", code, errs)
	}
	a, _ := os.ReadFile(one)
	b, _ := os.ReadFile(out)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("the merged shards (%d bytes) differ from one run (%d bytes)", len(b), len(a))
	}
}

// TestTranslateShardErrors: flags that cannot go with --shard, and a bad
// line reported with its line in the whole file.
func TestTranslateShardErrors(t *testing.T) {
	model := demoLuong(t)
	src := shardCorpus(t, 400)
	data, _ := os.ReadFile(src)
	lines := strings.Split(string(data), "\n")
	lines[350] = "1 May 2020 ☃" // a character the demo vocabulary lacks
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644)
	out := filepath.Join(t.TempDir(), "out.txt")
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--src", src, "--shard", "1/2"}, 2, "give both as files"},
		{[]string{"--src", "-", "--output", out, "--shard", "1/2"}, 2, "give both as files"},
		{[]string{"--src", src, "--output", out, "--shard", "1/2", "--format", "onmt"}, 2, "use the plain format or --json with --shard"},
		{[]string{"--src", src, "--output", out, "--shard", "3/2"}, 2, "K in K/N must be a whole number from 1 to 2"},
		{[]string{"--src", src, "--output", out, "--shard", "auto"}, 2, "neither JOB_COMPLETION_INDEX"},
		{[]string{"--output", out, "--shard", "1/2", "x"}, 2, "go with --src FILE"},
		{[]string{"--src", bad, "--output", out, "--shard", "4/4"}, 1, "line 351 (line "},
	} {
		code, _, errs := attnx(append([]string{"translate", "--model", model}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("translate %q: exit %d, %q; want exit %d and %q", c.args, code, errs, c.code, c.err)
		}
	}
	if m, _ := filepath.Glob(out + "*"); len(m) > 0 {
		t.Errorf("failed runs left %q", m)
	}
	if code, _, errs := attnx("merge"); code != 2 || !strings.Contains(errs, "want one OUTPUT") {
		t.Errorf("merge without OUTPUT: exit %d, %q", code, errs)
	}
}
