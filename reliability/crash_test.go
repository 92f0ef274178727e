package reliability

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attnx/attnx/export"
	"github.com/attnx/attnx/modeldir"
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

// checkComplete asserts that dir is a whole model directory: exactly the
// expected files, attnx.json valid, every graph loadable, and every byte
// equal to the reference export of the same checkpoint.
func checkComplete(t *testing.T, dir string, ref map[string][]byte) {
	t.Helper()
	files, err := readDirFiles(dir)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(modelFiles, ",") {
		t.Fatalf("%s holds %v, want %v: a partial model directory", dir, names, modelFiles)
	}
	info, err := modeldir.ReadInfo(filepath.Join(dir, "attnx.json"))
	if err != nil {
		t.Fatalf("attnx.json: %v", err)
	}
	for _, role := range []string{"encoder", "decoder"} {
		if _, err := export.Load(filepath.Join(dir, info.Files[role])); err != nil {
			t.Fatalf("%s: %v", role, err)
		}
	}
	for n, b := range files {
		if !bytes.Equal(b, ref[n]) {
			t.Fatalf("%s/%s differs from the reference export (%d vs %d bytes)", dir, n, len(b), len(ref[n]))
		}
	}
}

// leftovers lists entries of parent other than the model dir and the
// checkpoint: temporary or set-aside directories of killed runs.
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

// TestExportSurvivesSIGKILL exports a large checkpoint (H=256, V=16000:
// about 65 MB of weights) with the real binary and kills it with SIGKILL
// at random moments. After every kill the destination is either absent or
// a complete model directory byte-identical to an uninterrupted export;
// after every successful run nothing temporary is left beside it.
func TestExportSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("exports tens of MB dozens of times")
	}
	bin := attnxBinary(t)
	work := t.TempDir()
	ckpt := writeCheckpoint(t, filepath.Join(work, "big.safetensors"), luongDotStateDict(256, 16000, 16000, 42))
	parent := filepath.Join(work, "out")
	os.Mkdir(parent, 0o755)
	dst := filepath.Join(parent, "model")

	exportCmd := func() *exec.Cmd {
		cmd := exec.Command(bin, "export", ckpt, "-o", dst, "--force")
		cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
		return cmd
	}
	runOK := func() time.Duration {
		t.Helper()
		start := time.Now()
		cmd := exportCmd()
		if err := cmd.Run(); err != nil {
			t.Fatalf("export: %v\n%s", err, cmd.Stderr)
		}
		return time.Since(start)
	}

	// The reference: one uninterrupted export, timed.
	full := runOK()
	ref, err := readDirFiles(dst)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for _, b := range ref {
		total += len(b)
	}
	t.Logf("uninterrupted export: %v, %d files, %.1f MB", full.Round(time.Millisecond), len(ref), float64(total)/1e6)

	const wantKills = 24
	rng := rand.New(rand.NewSource(20240601))
	var kills, absent, complete, finished, successes, lostOld, sinceSuccess int
	for attempt := 0; kills < wantKills && attempt < 3*wantKills; attempt++ {
		// Half the runs start from nothing, half replace a complete
		// directory (the --force swap).
		if rng.Intn(2) == 0 {
			os.RemoveAll(dst)
		}
		_, statErr := os.Lstat(dst)
		existed := statErr == nil
		delay := time.Duration(rng.Int63n(int64(full) * 11 / 10))
		cmd := exportCmd()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		killErr := cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if killErr == nil && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			kills++
			sinceSuccess++
		} else {
			if err != nil {
				t.Fatalf("export (not killed) failed: %v\n%s", err, cmd.Stderr)
			}
			finished++
		}
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			absent++
			if existed {
				// Killed mid-swap: the old directory is set aside as
				// .model.old-N, and the next export puts it back or
				// replaces it; the successful run below checks that.
				lostOld++
			}
		} else {
			checkComplete(t, dst, ref)
			complete++
		}
		// Every third kill, a successful run must clean up whatever the
		// killed ones left and produce the reference again.
		if sinceSuccess == 3 {
			sinceSuccess = 0
			runOK()
			successes++
			checkComplete(t, dst, ref)
			if left := leftovers(parent, "model"); len(left) != 0 {
				t.Fatalf("after a successful export, %v remain beside the model directory", left)
			}
		}
	}
	if kills < wantKills {
		t.Fatalf("only %d of the runs were killed mid-way; the export is too fast for the delays", kills)
	}
	runOK()
	checkComplete(t, dst, ref)
	if left := leftovers(parent, "model"); len(left) != 0 {
		t.Fatalf("after the final export, %v remain beside the model directory", left)
	}
	t.Logf("%d runs killed, %d finished before the kill; after them the destination was absent %d times (%d of them mid-swap, with the old directory set aside) and complete %d times, never partial; %d successful runs in between left no temporary files",
		kills, finished, absent, lostOld, complete, successes+1)
}
