package modeldir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/attention"
)

// The two models the swap tests tell apart: an export of oldCkpt is "old",
// of newCkpt "new".
var (
	oldCkpt = ckpt("luong-dot_b1_l1", "checkpoint.pt")
	newCkpt = ckpt("luong-general_b1_l1", "checkpoint.pt")
)

// whichModel says what d holds: "old", "new", "absent", or "incomplete".
func whichModel(t *testing.T, d string) string {
	t.Helper()
	if _, err := os.Lstat(d); os.IsNotExist(err) {
		return "absent"
	}
	if _, ok := completeSince(d); !ok {
		return "incomplete"
	}
	info, err := ReadInfo(filepath.Join(d, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(entries(t, d), " "); got != "attnx.json decoder.onnx encoder.onnx" {
		return "incomplete"
	}
	switch info.Arch {
	case attention.LuongDot:
		return "old"
	case attention.LuongGeneral:
		return "new"
	}
	t.Fatalf("%s holds an unexpected %s model", d, info.Arch)
	return ""
}

// crashed is the panic value with which a test's crashHook stops Export.
type crashed string

// exportCrashingAt runs Export(newCkpt) with Force and stops it at point as
// a kill would: by a panic that skips Export's error cleanup (its deferred
// functions run, but they only release locks, as the kernel does for a
// killed process). It reports whether the point was reached.
func exportCrashingAt(t *testing.T, dir, point string) (reached bool) {
	t.Helper()
	crashHook = func(p string) {
		if p == point {
			panic(crashed(p))
		}
	}
	defer func() {
		crashHook = nil
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
			reached = true
		}
	}()
	if _, err := Export(newCkpt, dir, Options{Force: true}); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return false
}

// TestSwapCrashPoints stops a --force export at every point of the swap,
// with DIR absent and with DIR holding the old model, with the exchange
// and with the rename fallback, and checks what DIR holds right after the
// crash, what it holds once the next export has cleaned up (before its own
// swap), and that a complete export then leaves nothing else behind.
func TestSwapCrashPoints(t *testing.T) {
	cases := []struct {
		fallback    bool
		existed     bool
		point       string
		atCrash     string // DIR right after the crash
		afterClean  string // DIR after the next export's cleanStale
		leftAtCrash int    // temporary directories beside DIR at the crash
	}{
		{false, false, "before-swap", "absent", "absent", 1},
		{false, false, "renamed", "new", "new", 0},
		{false, true, "before-swap", "old", "old", 1},
		{false, true, "swapped", "new", "new", 1},
		{false, true, "removing-old", "new", "new", 1},
		{true, true, "before-swap", "old", "old", 1},
		{true, true, "aside", "absent", "old", 2},
		{true, true, "swapped", "new", "new", 1},
		{true, true, "removing-old", "new", "new", 1},
	}
	for _, c := range cases {
		name := c.point
		if c.existed {
			name = "replacing/" + name
		} else {
			name = "new/" + name
		}
		if c.fallback {
			name = "fallback/" + name
		}
		t.Run(name, func(t *testing.T) {
			forceRenameSwap = c.fallback
			defer func() { forceRenameSwap = false }()
			parent := t.TempDir()
			dir := filepath.Join(parent, "m")
			if c.existed {
				mustExport(t, oldCkpt, dir, Options{})
			}
			if !exportCrashingAt(t, dir, c.point) {
				t.Fatalf("the export never reached %q", c.point)
			}
			if got := whichModel(t, dir); got != c.atCrash {
				t.Errorf("right after the crash DIR is %s, want %s", got, c.atCrash)
			}
			if got := len(entries(t, parent)) - btoi(c.atCrash != "absent"); got != c.leftAtCrash {
				t.Errorf("right after the crash %d temporary directories (%v), want %d", got, entries(t, parent), c.leftAtCrash)
			}
			// The next export cleans up first; stop it before its swap.
			if !exportCrashingAt(t, dir, "before-swap") {
				t.Fatal("the second export never reached its swap")
			}
			if got := whichModel(t, dir); got != c.afterClean {
				t.Errorf("after the next export's clean-up DIR is %s, want %s", got, c.afterClean)
			}
			mustExport(t, newCkpt, dir, Options{Force: true})
			if got := whichModel(t, dir); got != "new" {
				t.Errorf("after a complete export DIR is %s", got)
			}
			if got := entries(t, parent); len(got) != 1 {
				t.Errorf("after a complete export the parent holds %v", got)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCleanStale builds the leftovers of killed runs by hand, including the
// state of issue 11 (an empty .old- directory that sorts after the real
// one, with DIR missing), and checks what cleanStale keeps.
func TestCleanStale(t *testing.T) {
	parentOf := t.TempDir()
	// A complete model directory to copy from, of each kind.
	src := map[string]string{"old": filepath.Join(parentOf, "old"), "new": filepath.Join(parentOf, "new")}
	mustExport(t, oldCkpt, src["old"], Options{})
	mustExport(t, newCkpt, src["new"], Options{})
	copyModel := func(t *testing.T, kind, to string, age time.Duration) {
		t.Helper()
		if err := os.CopyFS(to, os.DirFS(src[kind])); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		os.Chtimes(filepath.Join(to, InfoFile), when, when)
	}
	type entry struct {
		name string
		kind string // "old", "new", "empty", "partial" (graphs, no attnx.json), "nograph" (attnx.json only)
		age  time.Duration
	}
	cases := []struct {
		name    string
		entries []entry
		wantDir string   // what m holds afterwards
		wantAll []string // the parent's entries afterwards
	}{
		{"issue 11: empty old- sorts last", []entry{{".m.old-1", "old", 0}, {".m.old-9", "empty", 0}}, "old", []string{"m"}},
		{"only incomplete copies", []entry{{".m.old-3", "empty", 0}, {".m.old-4", "partial", 0}, {".m.old-5", "nograph", 0}}, "absent", nil},
		{"newest complete copy wins", []entry{{".m.old-1", "new", time.Minute}, {".m.old-2", "old", time.Hour}}, "new", []string{"m"}},
		{"DIR present: copies go", []entry{{"m", "new", 0}, {".m.old-1", "old", 0}, {".m.tmp-2", "old", 0}}, "new", []string{"m"}},
		{"unlocked tmp- with DIR missing: absent before", []entry{{".m.tmp-7", "new", 0}}, "absent", nil},
		{"other names untouched", []entry{{".m.old-x", "old", 0}, {".n.old-1", "old", 0}, {"m.old-1", "old", 0}}, "absent", []string{".m.old-x", ".n.old-1", "m.old-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			for _, e := range c.entries {
				p := filepath.Join(parent, e.name)
				switch e.kind {
				case "old", "new":
					copyModel(t, e.kind, p, e.age)
				case "empty":
					os.Mkdir(p, 0o755)
				case "partial":
					copyModel(t, "old", p, 0)
					os.Remove(filepath.Join(p, InfoFile))
				case "nograph":
					copyModel(t, "old", p, 0)
					os.Remove(filepath.Join(p, DecoderFile))
				}
			}
			dir := filepath.Join(parent, "m")
			cleanStale(dir)
			if got := whichModel(t, dir); got != c.wantDir {
				t.Errorf("m is %s, want %s", got, c.wantDir)
			}
			if got, want := strings.Join(entries(t, parent), " "), strings.Join(c.wantAll, " "); got != want {
				t.Errorf("parent holds %q, want %q", got, want)
			}
		})
	}
}

// TestExchange swaps two directories' names where the system can.
func TestExchange(t *testing.T) {
	parent := t.TempDir()
	a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	os.MkdirAll(filepath.Join(a, "in-a"), 0o755)
	os.MkdirAll(filepath.Join(b, "in-b"), 0o755)
	err := exchange(a, b)
	if err == errNoExchange {
		t.Skipf("no atomic exchange on this system or file system: Export uses its rename fallback")
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(entries(t, a), " ") + "|" + strings.Join(entries(t, b), " "); got != "in-b|in-a" {
		t.Errorf("after the exchange a|b hold %s, want in-b|in-a", got)
	}
	if err := exchange(a, filepath.Join(parent, "missing")); err == nil || err == errNoExchange {
		t.Errorf("exchanging with a missing name: %v, want an error", err)
	}
}

// TestSwapPoints records the crash points a complete export passes: with
// an atomic exchange there is none at which DIR is missing ("aside").
func TestSwapPoints(t *testing.T) {
	probe := t.TempDir()
	os.Mkdir(filepath.Join(probe, "a"), 0o755)
	os.Mkdir(filepath.Join(probe, "b"), 0o755)
	canExchange := exchange(filepath.Join(probe, "a"), filepath.Join(probe, "b")) != errNoExchange
	for _, c := range []struct {
		name             string
		fallback, exists bool
		want             string
	}{
		{"new directory", false, false, "before-swap renamed"},
		{"exchange", false, true, "before-swap swapped removing-old"},
		{"fallback", true, true, "before-swap aside swapped removing-old"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "exchange" && !canExchange {
				t.Skip("no atomic exchange on this system or file system")
			}
			dir := filepath.Join(t.TempDir(), "m")
			if c.exists {
				mustExport(t, oldCkpt, dir, Options{})
			}
			var points []string
			crashHook = func(p string) { points = append(points, p) }
			forceRenameSwap = c.fallback
			defer func() { crashHook, forceRenameSwap = nil, false }()
			mustExport(t, newCkpt, dir, Options{Force: true})
			if got := strings.Join(points, " "); got != c.want {
				t.Errorf("points %q, want %q", got, c.want)
			}
		})
	}
}
