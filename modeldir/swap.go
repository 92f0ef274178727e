package modeldir

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/internal/atomicfile"
)

// How a model directory is put in place (see the package comment). The
// temporary names, all in DIR's parent, are
//
//	.BASE.tmp-N   a directory being written, locked (flock) by the live
//	              run that writes it; after an exchange, the old model
//	              until it is removed
//	.BASE.old-N   only with the rename fallback: the previous DIR, set
//	              aside until the new one is in
//
// with BASE = filepath.Base(DIR) and N decimal digits.

func tmpPrefix(dir string) string { return "." + filepath.Base(dir) + ".tmp-" }
func oldPrefix(dir string) string { return "." + filepath.Base(dir) + ".old-" }

// crashHook, when set, is called at each named point of the swap. Only
// tests set it: the package's own tests, and binaries built with the
// attnx_crashpoints tag (crashpoints.go), which kill themselves there so
// that reliability/ can check what a SIGKILL at that exact point leaves.
// The points are
//
//	before-swap   the new directory is written and synced; nothing renamed
//	renamed       DIR was missing or empty and the new one is renamed in
//	swapped       the new directory is DIR, the old one not yet removed
//	removing-old  the old directory's attnx.json is removed, the rest not
//	aside         rename fallback only: DIR renamed aside, the new one not
//	              yet renamed in (DIR is missing)
var crashHook func(point string)

// forceRenameSwap makes swapIn use the rename fallback even where
// exchange works; set by tests only.
var forceRenameSwap bool

func crashPoint(point string) {
	if crashHook != nil {
		crashHook(point)
	}
}

// errNoExchange is exchange's error where the system or file system has no
// atomic exchange of two names.
var errNoExchange = errors.New("atomic exchange of two directories is not supported here")

// makeTemp creates and locks the temporary directory for dir. It is made
// with mode 0777 less the umask, as mkdir(1) would (0755 under the usual
// umask), not os.MkdirTemp's 0700: it becomes DIR, which others (a server
// running as another user, a container's non-root user) must read.
func makeTemp(dir string) (string, func(), error) {
	parent := filepath.Dir(dir)
	for range 10000 {
		tmp := filepath.Join(parent, tmpPrefix(dir)+strconv.FormatUint(uint64(rand.Uint32()), 10))
		err := os.Mkdir(tmp, 0o777)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("creating a temporary directory next to %s: %w", dir, err)
		}
		return tmp, lockDir(tmp, false), nil
	}
	return "", nil, fmt.Errorf("creating a temporary directory next to %s: every name tried exists", dir)
}

// staleDirs lists parent entries that are directories whose names start
// with prefix followed by decimal digits.
func staleDirs(dir, prefix string) []string {
	parent := filepath.Dir(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() || rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		out = append(out, filepath.Join(parent, e.Name()))
	}
	sort.Strings(out)
	return out
}

// completeSince reports whether d holds a complete model directory: an
// attnx.json that parses and every graph file it names, as regular files.
// It returns attnx.json's modification time (Unix nanoseconds) to order
// several complete copies. Export writes attnx.json last and the swap
// removes it first, so a directory still being written or already being
// removed is never complete.
func completeSince(d string) (int64, bool) {
	info, err := ReadInfo(filepath.Join(d, InfoFile))
	if err != nil {
		return 0, false
	}
	for _, f := range info.Files {
		if st, err := os.Lstat(filepath.Join(d, f)); err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
	}
	st, err := os.Stat(filepath.Join(d, InfoFile))
	if err != nil {
		return 0, false
	}
	return st.ModTime().UnixNano(), true
}

// cleanStale removes what killed runs for the same dir left behind. The
// caller holds the parent's lock, so no live run is between renames.
//
// A .tmp- directory not locked by a live run is removed: before a swap it
// holds a new model that never made it in (DIR is untouched), after an
// exchange it holds the old model (DIR holds the new one). An .old-
// directory exists only with the rename fallback: when DIR is missing, the
// newest complete .old- is renamed back to DIR (it is the only complete
// copy); once DIR exists, the others are removed. When DIR stays missing,
// only incomplete ones (empty or half removed) are removed: a complete copy
// is never deleted while DIR is absent, and an incomplete one is never put
// in its place.
func cleanStale(dir string) {
	olds := staleDirs(dir, oldPrefix(dir))
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) && len(olds) > 0 {
		best, bestTime := -1, int64(0)
		for i, o := range olds {
			if t, ok := completeSince(o); ok && (best < 0 || t > bestTime) {
				best, bestTime = i, t
			}
		}
		if best >= 0 && renameDir(olds[best], dir) == nil {
			atomicfile.SyncDir(filepath.Dir(dir))
			olds = append(olds[:best], olds[best+1:]...)
		}
	}
	_, err := os.Lstat(dir)
	dirExists := err == nil
	for _, o := range olds {
		if _, complete := completeSince(o); dirExists || !complete {
			os.RemoveAll(o)
		}
	}
	for _, t := range staleDirs(dir, tmpPrefix(dir)) {
		if unlock, ok := tryLockDir(t); ok {
			os.RemoveAll(t)
			unlock()
		}
	}
}

// swapIn puts the complete directory tmp in place as dir. A missing or
// empty dir is replaced by rename(2), atomically. A non-empty one (only
// with force) is exchanged with tmp atomically where the system can
// (renameat2 RENAME_EXCHANGE on Linux, renamex_np RENAME_SWAP on macOS),
// so that dir names the old or the new model at every instant; the old
// one, now under tmp's name, is then removed. Elsewhere, or where the file
// system refuses the exchange, dir is renamed aside to .BASE.old-N and tmp
// renamed in: a crash between the two leaves dir missing and the old model
// in .old-N, which the next Export of dir (cleanStale) puts back.
func swapIn(tmp, dir string, force bool) (replaced bool, err error) {
	parent := filepath.Dir(dir)
	if err := checkTarget(dir, force); err != nil {
		return false, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	crashPoint("before-swap")
	if len(entries) == 0 {
		// Missing, or empty: rename(2) replaces an empty directory.
		if err := renameDir(tmp, dir); err != nil {
			return false, fmt.Errorf("moving the new model into %s: %w", dir, err)
		}
		crashPoint("renamed")
		return false, atomicfile.SyncDir(parent)
	}
	old := tmp
	if err := exchangeOrFallback(tmp, dir); errors.Is(err, errNoExchange) {
		if old, err = swapByRenames(tmp, dir); err != nil {
			return false, err
		}
	} else if err != nil {
		return false, fmt.Errorf("exchanging the new model with %s: %w (the old directory is unchanged)", dir, err)
	}
	crashPoint("swapped")
	if err := atomicfile.SyncDir(parent); err != nil {
		return true, err
	}
	if err := removeOld(old); err != nil {
		return true, fmt.Errorf("the new model is in %s, but removing the old one (%s) failed: %w", dir, old, err)
	}
	return true, nil
}

// exchangeOrFallback exchanges the two directories, or returns
// errNoExchange when it cannot (or a test forces the fallback).
func exchangeOrFallback(a, b string) error {
	if forceRenameSwap {
		return errNoExchange
	}
	return exchange(a, b)
}

// swapByRenames is the fallback of swapIn: dir is renamed aside to a new
// .BASE.old-N name (never created beforehand, so that no empty directory
// of that name can exist), then tmp is renamed to dir. It returns the
// name the old directory is under.
func swapByRenames(tmp, dir string) (string, error) {
	var old string
	for try := 0; ; try++ {
		old = filepath.Join(filepath.Dir(dir), oldPrefix(dir)+strconv.FormatUint(rand.Uint64()%1e12, 10))
		if _, err := os.Lstat(old); !errors.Is(err, os.ErrNotExist) && try < 100 {
			continue
		}
		if err := renameDir(dir, old); err != nil {
			return "", fmt.Errorf("setting %s aside: %w", dir, err)
		}
		break
	}
	crashPoint("aside")
	if err := renameDir(tmp, dir); err != nil {
		if rerr := renameDir(old, dir); rerr != nil {
			return "", fmt.Errorf("moving the new model into %s: %w; restoring the old directory from %s also failed: %v (the next export of %s restores it)", dir, err, old, rerr, dir)
		}
		return "", fmt.Errorf("moving the new model into %s: %w (the old directory is unchanged)", dir, err)
	}
	return old, nil
}

// removeOld removes a replaced model directory, attnx.json first, so that
// a removal cut short leaves a directory that is visibly incomplete.
func removeOld(old string) error {
	if err := os.Remove(filepath.Join(old, InfoFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	crashPoint("removing-old")
	return os.RemoveAll(old)
}
