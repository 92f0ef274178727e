package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/shard"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
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

// TestAttnxHelperProcess runs attnx's main with ATTNX_HELPER_ARGS (JSON),
// or with ATTNX_HELPER_ARGV=1 the arguments after the test binary's
// own and "--" (a stand-in attnx for scripts);
// with ATTNX_STALL_AFTER=I it stops for good once sentence I of its test
// set is written, after creating the file ATTNX_STALLED, so that a test
// can kill it mid-shard.
func TestAttnxHelperProcess(t *testing.T) {
	args := os.Getenv("ATTNX_HELPER_ARGS")
	var argv []string
	switch {
	case os.Getenv("ATTNX_HELPER_ARGV") == "1":
		argv = flag.Args() // after the test binary's flags and --
	case args == "":
		t.Skip("helper process for tests that run attnx in a process of its own")
	default:
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(99)
		}
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

// attnxProcess starts attnx with args in a process of its own, with env
// added to its environment.
func attnxProcess(t *testing.T, args []string, env ...string) *exec.Cmd {
	t.Helper()
	argv, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttnxHelperProcess$")
	cmd.Env = append(append(os.Environ(), "ATTNX_HELPER_ARGS="+string(argv)), env...)
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
	cmd := attnxProcess(t, args, shard.EnvJobIndex+"=1", "ATTNX_STALL_AFTER=100", "ATTNX_STALLED="+stalled)
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
			cmds[i] = attnxProcess(t, args, fmt.Sprintf("%s=%d", shard.EnvJobIndex, i))
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
	// A part that would be the source itself is refused before anything
	// is written.
	dir := t.TempDir()
	named := filepath.Join(dir, "x.txt.shard-1-of-2")
	os.WriteFile(named, data, 0o644)
	code, _, errs := attnx("translate", "--model", model, "--src", named, "--output", filepath.Join(dir, "x.txt"), "--shard", "1/2")
	if after, _ := os.ReadFile(named); code != 2 || !strings.Contains(errs, "is the input") || string(after) != string(data) {
		t.Errorf("a part that is the source: exit %d, %q, source kept %v", code, errs, string(after) == string(data))
	}
	if code, _, errs = attnx("merge"); code != 2 || !strings.Contains(errs, "want one OUTPUT") {
		t.Errorf("merge without OUTPUT: exit %d, %q", code, errs)
	}
}

// jobCommand reads a Job manifest of deploy/ and returns its container's
// arguments with each volume's mount path replaced by the local directory
// mounts gives for the volume's claim.
func jobCommand(t *testing.T, path string, mounts map[string]string) []string {
	t.Helper()
	var job batchv1.Job
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	claims := map[string]string{}
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	args := append([]string(nil), c.Args...)
	for _, vm := range c.VolumeMounts {
		local := mounts[claims[vm.Name]]
		if local == "" {
			t.Fatalf("%s mounts claim %q, which the test does not provide", path, claims[vm.Name])
		}
		for i, a := range args {
			if rest, ok := strings.CutPrefix(a, vm.MountPath+"/"); ok {
				args[i] = filepath.Join(local, rest)
			}
		}
	}
	return args
}

// TestIndexedJobLocally runs deploy/translate/translate-job.yaml as Kubernetes
// would, here: one process per completion index, each with its
// JOB_COMPLETION_INDEX and the manifest's own arguments (the claims'
// mount paths pointing at local directories: the demo model, a test set),
// then deploy/merge/merge-job.yaml's command; the merged file is the one run's.
func TestIndexedJobLocally(t *testing.T) {
	data, models := t.TempDir(), t.TempDir()
	if err := os.CopyFS(filepath.Join(models, "dates"), os.DirFS(demoLuong(t))); err != nil {
		t.Fatal(err)
	}
	corpus, _ := os.ReadFile(shardCorpus(t, 1500))
	os.WriteFile(filepath.Join(data, "corpus.txt"), corpus, 0o644)
	// No out/ folder: the Job's image has no shell to make it, so the
	// shards make it.
	mounts := map[string]string{"attnx-data": data, "attnx-models": models}
	args := jobCommand(t, "../../deploy/translate/translate-job.yaml", mounts)
	var job batchv1.Job
	raw, _ := os.ReadFile("../../deploy/translate/translate-job.yaml")
	yaml.Unmarshal(raw, &job)
	n := int(*job.Spec.Completions)
	var cmds []*exec.Cmd
	var logs = make([]strings.Builder, n)
	for i := range n {
		c := attnxProcess(t, args, fmt.Sprintf("%s=%d", shard.EnvJobIndex, i))
		c.Stderr = &logs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("pod %d: %v\n%s", i, err, logs[i].String())
		}
	}
	merge := jobCommand(t, "../../deploy/merge/merge-job.yaml", mounts)
	if code, _, errs := attnx(merge...); code != 0 {
		t.Fatalf("attnx %q: %s", merge, errs)
	}
	one := filepath.Join(t.TempDir(), "one.txt")
	if code, _, errs := attnx("translate", "--model", flagAfter(args, "--model"), "--src", flagAfter(args, "--src"), "--output", one); code != 0 {
		t.Fatal(errs)
	}
	a, _ := os.ReadFile(one)
	b, err := os.ReadFile(merge[1])
	if err != nil || len(a) == 0 || string(a) != string(b) {
		t.Errorf("the Job's merged output (%d bytes, %v) differs from one run's (%d bytes)", len(b), err, len(a))
	}
}

func flagAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestSlurmArrayLocally runs deploy/translate.sbatch as a Slurm array
// would: once per task of its #SBATCH --array range, with the variables
// Slurm sets (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _MAX,
// SLURM_CPUS_PER_TASK), under bash, with a stand-in srun that runs its
// command here and attnx standing for the binary; then one task
// resubmitted alone as its comment says (sbatch --array=I: an array of
// one task, COUNT 1, MIN = MAX = I) after its part was lost, which must
// translate that task's shard again, not the whole file as shard 1/1;
// then the merge its comment gives. The merged file is the one run's.
func TestSlurmArrayLocally(t *testing.T) {
	bash := testenv.Command(t, "bash", "bash")
	script, err := filepath.Abs("../../deploy/translate.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi, cpus int
	for _, l := range strings.Split(string(text), "\n") {
		fmt.Sscanf(l, "#SBATCH --array=%d-%d", &lo, &hi)
		fmt.Sscanf(l, "#SBATCH --cpus-per-task=%d", &cpus)
	}
	if hi < lo || cpus < 1 {
		t.Fatalf("%s: --array=%d-%d, --cpus-per-task=%d", script, lo, hi, cpus)
	}
	bin := t.TempDir()
	self, _ := filepath.Abs(os.Args[0])
	stubs := map[string]string{
		// srun runs a job step: here, the command after srun's options.
		"srun":  "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nexec \"$@\"\n",
		"attnx": fmt.Sprintf("#!/bin/sh\nATTNX_HELPER_ARGV=1 exec %q -test.run='^TestAttnxHelperProcess$' -- \"$@\"\n", self),
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(string(text), "sbatch --array=2 ") {
		t.Fatalf("%s: the resubmission its comment gives changed; update this test", script)
	}
	work := t.TempDir()
	model := demoLuong(t)
	src := shardCorpus(t, 1300)
	out := filepath.Join(work, "out", "corpus.txt")
	n := hi - lo + 1
	// task runs the script as Slurm runs task id of the array lo-hi.
	task := func(id, lo, hi int) string {
		cmd := exec.Command(bash, script)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "MODEL="+model, "SRC="+src, "OUT="+out,
			fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", id), fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%d", hi-lo+1),
			fmt.Sprintf("SLURM_ARRAY_TASK_MIN=%d", lo), fmt.Sprintf("SLURM_ARRAY_TASK_MAX=%d", hi), fmt.Sprintf("SLURM_CPUS_PER_TASK=%d", cpus))
		log, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("task %d of the array %d-%d: %v\n%s", id, lo, hi, err, log)
		}
		return string(log)
	}
	for id := lo; id <= hi; id++ {
		if log := task(id, lo, hi); !strings.Contains(log, fmt.Sprintf("-> %s", shard.Part(out, shard.Spec{K: id - lo + 1, N: n}))) {
			t.Fatalf("task %d: %s", id, log)
		}
	}
	part := shard.Part(out, shard.Spec{K: 2 - lo + 1, N: n})
	os.Remove(part)
	os.Remove(shard.RecordFile(part))
	if log := task(2, 2, 2); !strings.Contains(log, "-> "+part) {
		t.Fatalf("task 2 resubmitted alone (--array=2) did not translate %s: %s", part, log)
	}
	// Without /N, a task resubmitted alone would be shard 1/1: refused,
	// as the records beside OUT are of N shards.
	for k, v := range map[string]string{shard.EnvSlurmTask: "2", shard.EnvSlurmCount: "1", shard.EnvSlurmMin: "2", shard.EnvSlurmMax: "2"} {
		t.Setenv(k, v)
	}
	code, _, errs := attnx("translate", "--model", model, "--src", src, "--output", out, "--shard", "auto")
	if code != 2 || !strings.Contains(errs, fmt.Sprintf("give --shard auto/%d", n)) {
		t.Errorf("--shard auto beside records of %d shards: exit %d, %q", n, code, errs)
	}
	if !strings.Contains(string(text), `--wrap "attnx merge out/corpus.txt"`) {
		t.Fatalf("%s: the merge command its comment gives changed; update this test", script)
	}
	if code, _, errs := attnx("merge", "--remove-parts", out); code != 0 {
		t.Fatal(errs)
	}
	if left, _ := filepath.Glob(out + ".shard-*"); len(left) > 0 {
		t.Errorf("merge --remove-parts left %q", left)
	}
	one := filepath.Join(work, "one.txt")
	if code, _, errs := attnx("translate", "--model", model, "--src", src, "--output", one); code != 0 {
		t.Fatal(errs)
	}
	a, _ := os.ReadFile(one)
	b, _ := os.ReadFile(out)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("the array's merged output (%d bytes) differs from one run's (%d bytes)", len(b), len(a))
	}
}

// linkModel makes dir a model directory of links to the files of model,
// as a release folder or a hub snapshot is, replacing what dir held.
func linkModel(t *testing.T, dir, model string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(model)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(model, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShardsNotFooled: a finished shard is translated again when what
// decides its output changed (the model a directory of links points to;
// --batch given, which sets the toolkit's batches), merge refuses a shard
// of a source rewritten since to as many bytes, and a stray record with a
// huge N is named, not counted to.
func TestShardsNotFooled(t *testing.T) {
	modelA := demoLuong(t)
	modelB := filepath.Join(t.TempDir(), "b") // A with another output limit
	if err := os.CopyFS(modelB, os.DirFS(modelA)); err != nil {
		t.Fatal(err)
	}
	info := map[string]any{}
	data, _ := os.ReadFile(filepath.Join(modelA, "attnx.json"))
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	info["defaults"] = map[string]any{"max_len": 6}
	data, _ = json.Marshal(info)
	os.WriteFile(filepath.Join(modelB, "attnx.json"), data, 0o644)

	dir := t.TempDir()
	rel := filepath.Join(dir, "release")
	src := shardCorpus(t, 300)
	out := filepath.Join(dir, "out.txt")
	shardRun := func(k string, extra ...string) string {
		t.Helper()
		code, _, errs := attnx(append([]string{"translate", "--model", rel, "--src", src, "--output", out, "--shard", k}, extra...)...)
		if code != 0 {
			t.Fatalf("--shard %s %q: exit %d: %s", k, extra, code, errs)
		}
		return errs
	}
	linkModel(t, rel, modelA)
	shardRun("1/2")
	linkModel(t, rel, modelB)
	if log := shardRun("1/2"); strings.Contains(log, "skipped") || !strings.Contains(log, "translating it again") {
		t.Errorf("shard 1/2 after the links were pointed at another model: %s", log)
	}
	shardRun("2/2")
	whole := filepath.Join(dir, "whole.txt")
	if code, _, errs := attnx("translate", "--model", modelB, "--src", src, "--output", whole); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := attnx("merge", out); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errs)
	}
	a, _ := os.ReadFile(whole)
	b, _ := os.ReadFile(out)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("merged shards (%d bytes) differ from one run of the model the links point to (%d bytes)", len(b), len(a))
	}
	if log := shardRun("1/2", "--batch", "32"); strings.Contains(log, "skipped") {
		t.Errorf("shard 1/2 with --batch 32 given: %s", log)
	}
	if log := shardRun("1/2", "--batch", "32"); !strings.Contains(log, "skipped") {
		t.Errorf("shard 1/2 with --batch 32, run again: not skipped: %s", log)
	}

	// Line 1 rewritten to as many bytes: shard 2/2's bytes are the same,
	// it is skipped, and merge names shard 1/2 as stale.
	os.Remove(out)
	text, _ := os.ReadFile(src)
	line1, rest, _ := strings.Cut(string(text), "\n")
	os.WriteFile(src, []byte(strings.Repeat("9", len(line1))+"\n"+rest), 0o644)
	shardRun("2/2", "--batch", "32")
	code, _, errs := attnx("merge", out)
	if code != 1 || !strings.Contains(errs, "changed after shard 1/2 (bytes 0-") {
		t.Errorf("merge after line 1 of the source changed: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused merge wrote %s", out)
	}

	for _, n := range []string{"400000000", "99999999999999999999", "0"} {
		stray := filepath.Join(t.TempDir(), "out.txt")
		os.WriteFile(stray+".shard-1-of-"+n+".json", []byte("{}\n"), 0o644)
		code, _, errs := attnx("merge", stray)
		if code != 1 || !strings.Contains(errs, stray+".shard-1-of-"+n+".json: not the record of a shard") {
			t.Errorf("merge beside a stray record of N = %s: exit %d, %q", n, code, errs)
		}
	}
}

// TestShardLimitNote: an OpenNMT-py model's output limits follow its
// toolkit's batches (-max_length_ratio, defaults.batching), also with
// --max-len alone, which keeps the model's ratio: a shard says so and
// gives the remedy that holds, --max-len N --max-len-ratio 0; with that
// remedy the limits are fixed, no note is printed, and the merged shards
// are the one run's.
func TestShardLimitNote(t *testing.T) {
	model := filepath.Join(t.TempDir(), "onmt")
	if code, _, errs := attnx("export", "../../testdata/demo/onmt_dates_spm.pt", "-o", model, "--greedy"); code != 0 {
		t.Fatal(errs)
	}
	src := shardCorpus(t, 300)
	out := filepath.Join(t.TempDir(), "out.txt")
	const note = "the model's output limits depend on its toolkit's batches"
	for _, c := range []struct {
		flags []string
		note  bool
	}{
		{[]string{"--max-len", "60"}, true},
		{nil, true},
		{[]string{"--max-len-ratio", "0.5"}, true},
		{[]string{"--max-len-ratio", "0"}, false},
		{[]string{"--max-len", "60", "--max-len-ratio", "0"}, false}, // last: shard 1/2 of the merge below
	} {
		for _, p := range []string{shard.Part(out, shard.Spec{K: 1, N: 2}), shard.RecordFile(shard.Part(out, shard.Spec{K: 1, N: 2}))} {
			os.Remove(p)
		}
		args := append([]string{"translate", "--model", model, "--src", src, "--output", out, "--shard", "1/2", "--beam", "1"}, c.flags...)
		code, _, errs := attnx(args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", c.flags, code, errs)
		}
		if got := strings.Contains(errs, note); got != c.note || got && !strings.Contains(errs, "--max-len N --max-len-ratio 0 gives every sentence the same limit") {
			t.Errorf("%q: note %v, want %v: %s", c.flags, got, c.note, errs)
		}
	}
	one := filepath.Join(t.TempDir(), "one.txt")
	fixed := []string{"--beam", "1", "--max-len", "60", "--max-len-ratio", "0"}
	if code, _, errs := attnx(append([]string{"translate", "--model", model, "--src", src, "--output", one}, fixed...)...); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := attnx(append([]string{"translate", "--model", model, "--src", src, "--output", out, "--shard", "2/2"}, fixed...)...); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := attnx("merge", out); code != 0 {
		t.Fatal(errs)
	}
	a, _ := os.ReadFile(one)
	b, _ := os.ReadFile(out)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("merged shards with fixed limits (%d bytes) differ from one run (%d bytes)", len(b), len(a))
	}
}
