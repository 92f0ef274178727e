package reliability

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxfile"
)

// modelFiles are the files `attnx export` (without --greedy) writes.
var modelFiles = []string{"attnx.json", "decoder.onnx", "encoder.onnx"}

// readDirFiles returns the files of a model directory by name, or an error
// when it holds anything else.
func readDirFiles(dir string) (map[string][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return nil, errors.New(e.Name() + " is not a regular file")
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = b
	}
	return files, nil
}

// leftovers lists entries of parent other than keep: temporary or
// set-aside directories of killed runs.
func leftovers(parent string, keep ...string) []string {
	ents, _ := os.ReadDir(parent)
	var out []string
outer:
	for _, e := range ents {
		for _, k := range keep {
			if e.Name() == k {
				continue outer
			}
		}
		out = append(out, e.Name())
	}
	return out
}

// killRig exports two different checkpoints, "A" and "B", into the same
// model directory with the real binary, and tells which one the directory
// holds.
type killRig struct {
	t           *testing.T
	bin         string
	ckpt        map[string]string
	ref         map[string]map[string][]byte // the uninterrupted exports
	parent, dst string
}

// newKillRig writes the two checkpoints (Luong-dot, hidden size H,
// vocabularies of V, different seeds) and exports each once, uninterrupted,
// as references; it returns the durations of those runs.
func newKillRig(t *testing.T, H, V int64) (*killRig, []time.Duration) {
	work := t.TempDir()
	r := &killRig{t: t, bin: attnxBinary(t), ckpt: map[string]string{}, ref: map[string]map[string][]byte{}}
	r.parent = filepath.Join(work, "out")
	if err := os.Mkdir(r.parent, 0o755); err != nil {
		t.Fatal(err)
	}
	r.dst = filepath.Join(r.parent, "model")
	for i, name := range []string{"A", "B"} {
		r.ckpt[name] = writeCheckpoint(t, filepath.Join(work, name+".safetensors"), luongDotStateDict(H, V, V, uint64(42+i)))
	}
	var times []time.Duration
	for _, name := range []string{"A", "B", "A", "B"} {
		times = append(times, r.runOK(name))
		if r.ref[name] == nil {
			r.ref[name] = r.checkReference()
		}
	}
	if bytes.Equal(r.ref["A"]["encoder.onnx"], r.ref["B"]["encoder.onnx"]) {
		t.Fatal("the two checkpoints export the same encoder: outcomes could not be told apart")
	}
	return r, times
}

// checkReference reads dst after an uninterrupted export and checks that it
// is a whole model directory: exactly the expected files, attnx.json
// valid, every graph loadable.
func (r *killRig) checkReference() map[string][]byte {
	t := r.t
	t.Helper()
	files, err := readDirFiles(r.dst)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(modelFiles, ",") {
		t.Fatalf("%s holds %v, want %v", r.dst, names, modelFiles)
	}
	info, err := modeldir.ReadInfo(filepath.Join(r.dst, "attnx.json"))
	if err != nil {
		t.Fatalf("attnx.json: %v", err)
	}
	for _, role := range []string{"encoder", "decoder"} {
		if _, err := onnxfile.Load(filepath.Join(r.dst, info.Files[role])); err != nil {
			t.Fatalf("%s: %v", role, err)
		}
	}
	return files
}

// command is `attnx export CKPT -o DST --force` with env added.
func (r *killRig) command(name string, env ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, "export", r.ckpt[name], "-o", r.dst, "--force")
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// runOK exports name uninterrupted, checks that dst then holds it and
// nothing is left beside it, and returns the run's duration.
func (r *killRig) runOK(name string) time.Duration {
	t := r.t
	t.Helper()
	start := time.Now()
	cmd := r.command(name)
	if err := cmd.Run(); err != nil {
		t.Fatalf("export %s: %v\n%s", name, err, cmd.Stderr)
	}
	d := time.Since(start)
	if r.ref[name] != nil {
		if got := r.state(); got != name {
			t.Fatalf("after an uninterrupted export of %s, the directory holds %s", name, got)
		}
	}
	if left := leftovers(r.parent, "model"); len(left) != 0 {
		t.Fatalf("after an uninterrupted export, %v remain beside the model directory", left)
	}
	return d
}

// state says what dst holds: "absent", "A" or "B" (byte for byte the
// reference export), or fails the test describing the partial directory.
func (r *killRig) state() string {
	t := r.t
	t.Helper()
	if _, err := os.Lstat(r.dst); errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	files, err := readDirFiles(r.dst)
	if err != nil {
		t.Fatalf("%s: %v", r.dst, err)
	}
	for name, ref := range r.ref {
		same := len(files) == len(ref)
		for n, b := range ref {
			same = same && bytes.Equal(files[n], b)
		}
		if same {
			return name
		}
	}
	var desc []string
	for n, b := range files {
		desc = append(desc, fmt.Sprintf("%s (%d bytes)", n, len(b)))
	}
	sort.Strings(desc)
	t.Fatalf("%s holds %v: neither complete model A nor B, a partial model directory", r.dst, desc)
	return ""
}

// setState makes dst hold want ("absent", "A" or "B").
func (r *killRig) setState(want string) {
	r.t.Helper()
	if r.state() == want {
		return
	}
	if want == "absent" {
		if err := os.RemoveAll(r.dst); err != nil {
			r.t.Fatal(err)
		}
		return
	}
	r.runOK(want)
}

// other is the checkpoint that is not name.
func other(name string) string {
	if name == "A" {
		return "B"
	}
	return "A"
}

// Outcomes of a killed export, by what the directory held before and after.
const (
	oldComplete   = "old complete"
	newComplete   = "new complete"
	absentBefore  = "absent-before"
	finishedFirst = "finished before the kill"
)

// outcome classifies a killed run that exported target over before
// (a state), failing the test for anything but old complete, new complete
// or (when there was none) still absent.
func (r *killRig) outcome(before, target string) string {
	r.t.Helper()
	after := r.state()
	switch {
	case after == target:
		return newComplete
	case before == "absent" && after == "absent":
		return absentBefore
	case after == before:
		return oldComplete
	case after == "absent":
		r.t.Fatalf("the directory held %s before the killed run and is now missing: the old model was lost", before)
	}
	r.t.Fatalf("the directory held %s before a killed export of %s and now holds %s", before, target, after)
	return ""
}

// wasKilled reports whether SIGKILL ended cmd, which has been waited
// for with result err; any other failure fails the test.
func wasKilled(t *testing.T, cmd *exec.Cmd, err error) bool {
	t.Helper()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return true
	}
	if err != nil {
		t.Fatalf("export (not killed) failed: %v\n%s", err, cmd.Stderr)
	}
	return false
}

// killAfter starts cmd and SIGKILLs it after delay unless it has exited
// by then. It reports whether the kill ended it, and when not, how long
// the run took.
func killAfter(t *testing.T, cmd *exec.Cmd, delay time.Duration) (killed bool, took time.Duration) {
	t.Helper()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		err  error
		took time.Duration
	}
	exited := make(chan result, 1)
	go func() {
		err := cmd.Wait()
		exited <- result{err, time.Since(start)}
	}()
	var res result
	select {
	case res = <-exited:
	case <-time.After(delay):
		cmd.Process.Signal(syscall.SIGKILL)
		res = <-exited
	}
	return wasKilled(t, cmd, res.err), res.took
}

// tally counts outcomes and prints them in a fixed order.
type tally map[string]int

func (c tally) String() string {
	var parts []string
	for _, k := range []string{oldComplete, newComplete, absentBefore, finishedFirst} {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// TestExportSurvivesSIGKILL exports two large checkpoints (H=256,
// V=16000: about 70 MB of graphs each) in turn into one directory with the
// real binary and kills it with SIGKILL, (1) at each point of the
// directory swap through the binary's test hook (ATTNX_CRASH_AT, see
// attnxBinary), and (2) 24 times at random moments spread uniformly over
// 1.1 times the median duration of the uninterrupted runs (measured first,
// and again as the test goes), so that the kills cover the whole export on
// a slower or faster machine. After every kill the directory must hold the
// old model complete, the new one complete, or, when there was none
// before, nothing: a missing directory that existed before, or a partial
// one, fails. Every third kill a complete export must clean up what the
// killed ones left.
func TestExportSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("exports tens of MB dozens of times")
	}
	r, times := newKillRig(t, 256, 16000)
	var total int
	for _, b := range r.ref["A"] {
		total += len(b)
	}
	t.Logf("uninterrupted exports: %v, %d files, %.1f MB", times, len(r.ref["A"]), float64(total)/1e6)
	rng := rand.New(rand.NewSource(20240601))
	sinceSuccess := 0
	afterKill := func() {
		if sinceSuccess++; sinceSuccess == 3 {
			sinceSuccess = 0
			times = append(times, r.runOK(other(r.state())))
		}
	}

	// (1) At the swap itself: each point, twice, from each starting state
	// where it is reached.
	hookTally, hookKills := tally{}, 0
	for _, c := range []struct {
		point, before, want string
	}{
		{"before-swap", "absent", absentBefore},
		{"renamed", "absent", newComplete},
		{"before-swap", "A", oldComplete},
		{"swapped", "A", newComplete},
		{"removing-old", "A", newComplete},
	} {
		for rep := 0; rep < 2; rep++ {
			before := c.before
			if before != "absent" && rep == 1 {
				before = other(before)
			}
			r.setState(before)
			target := "A"
			if before == "A" {
				target = "B"
			}
			cmd := r.command(target, "ATTNX_CRASH_AT="+c.point)
			if !wasKilled(t, cmd, cmd.Run()) {
				t.Fatalf("an export over %s never reached the swap point %q", before, c.point)
			}
			got := r.outcome(before, target)
			if got != c.want {
				t.Fatalf("killed at %q over %s: %s, want %s", c.point, before, got, c.want)
			}
			hookTally[got]++
			hookKills++
			afterKill()
		}
	}
	// With the atomic exchange there is no moment at which the old
	// directory is set aside and DIR missing: the fallback's "aside"
	// point is never reached.
	r.setState("A")
	if cmd := r.command("B", "ATTNX_CRASH_AT=aside"); wasKilled(t, cmd, cmd.Run()) {
		t.Fatalf("the export set the old directory aside (the rename fallback) instead of exchanging it with the new one: does the file system of %s support renameat2(RENAME_EXCHANGE)?", r.parent)
	}
	if got := r.state(); got != "B" {
		t.Fatalf("an export of B left %s", got)
	}
	t.Logf("killed at the swap points: %v", hookTally)

	// (2) At random moments over the whole export: the kill window is 1.1
	// times the median duration of the uninterrupted runs seen so far,
	// those that finish before their kill included, so that it follows the
	// machine's speed as the load on it changes.
	window := func() time.Duration {
		s := append([]time.Duration(nil), times...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2] * 11 / 10
	}
	const wantKills = 24
	timedTally := tally{}
	var quarters [4]int // kills by the quarter of the kill window they fell in
	kills := 0
	for attempt := 0; kills < wantKills && attempt < 4*wantKills; attempt++ {
		// Half the runs start from nothing, half replace a complete
		// directory (the --force swap).
		before := r.state()
		if rng.Intn(2) == 0 {
			before = "absent"
			r.setState(before)
		} else if before == "absent" {
			before = []string{"A", "B"}[rng.Intn(2)]
			times = append(times, r.runOK(before))
		}
		target := "A"
		if before == "A" || (before == "absent" && rng.Intn(2) == 0) {
			target = "B"
		}
		full := window()
		delay := time.Duration(rng.Int63n(int64(full)))
		killed, took := killAfter(t, r.command(target), delay)
		if !killed {
			// It finished first (the kill fell in the last tenth, or
			// the machine is faster now than when measured).
			times = append(times, took)
			if got := r.state(); got != target {
				t.Fatalf("a finished export of %s left %s", target, got)
			}
			timedTally[finishedFirst]++
			continue
		}
		kills++
		quarters[min(3, int(4*delay/full))]++
		timedTally[r.outcome(before, target)]++
		afterKill()
	}
	if kills < wantKills {
		t.Fatalf("only %d of the runs were killed mid-way (%v); the export is too fast for the delays", kills, timedTally)
	}
	t.Logf("killed at random moments: %v; kills by quarter of the kill window: %v (final window %v)", timedTally, quarters, window().Round(time.Millisecond))
	r.runOK(other(r.state()))
	all := tally{}
	for _, c := range []tally{hookTally, timedTally} {
		for k, v := range c {
			all[k] += v
		}
	}
	t.Logf("all %d kills: %v; no lost or partial directory", hookKills+kills, all)
}

// TestExportRenameFallbackRecovers covers swapIn's fallback for systems
// without an atomic exchange (forced with ATTNX_SWAP=rename): killed
// between setting the old directory aside and renaming the new one in,
// the directory is missing, the old model complete beside it; the next
// export puts it back before anything else.
func TestExportRenameFallbackRecovers(t *testing.T) {
	r, _ := newKillRig(t, 16, 50)
	r.setState("A")
	killAt := func(name, point string, env ...string) {
		t.Helper()
		cmd := r.command(name, append(env, "ATTNX_CRASH_AT="+point)...)
		if !wasKilled(t, cmd, cmd.Run()) {
			t.Fatalf("the export never reached %q", point)
		}
	}
	killAt("B", "aside", "ATTNX_SWAP=rename")
	if got := r.state(); got != "absent" {
		t.Fatalf("killed with the old directory set aside, the directory holds %s", got)
	}
	left := leftovers(r.parent)
	var aside []string
	for _, l := range left {
		if strings.HasPrefix(l, ".model.old-") {
			aside = append(aside, l)
		}
	}
	if len(aside) != 1 {
		t.Fatalf("beside the missing directory: %v, want one .model.old-N", left)
	}
	// The next run (killed before its own swap) restores A first.
	killAt("B", "before-swap")
	if got := r.state(); got != "A" {
		t.Fatalf("after the next run's clean-up the directory holds %s, want the old model A", got)
	}
	killAt("B", "swapped", "ATTNX_SWAP=rename")
	if got := r.state(); got != "B" {
		t.Fatalf("killed after the fallback's second rename the directory holds %s, want B", got)
	}
	r.runOK("A")
}
