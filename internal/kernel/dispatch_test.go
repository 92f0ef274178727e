package kernel

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestChoosePath(t *testing.T) {
	all := []string{PathVNNI, PathAVX512, PathAVXVNNI, PathAVX2, PathGo}
	avx2 := []string{PathAVX2, PathGo}
	for _, c := range []struct {
		want              string
		can               []string
		asm, panels, vnni bool
		path, err         string
	}{
		{"", all, true, true, true, PathVNNI, ""},
		{"auto", avx2, true, false, false, PathAVX2, ""},
		{"avx512f", all, true, true, false, PathAVX512, ""},
		{" AVX2 ", all, true, false, false, PathAVX2, ""},
		{"avx-vnni", all, true, false, false, PathAVXVNNI, ""},
		{"avx-vnni", avx2, true, false, false, PathAVX2, "ATTNX_KERNELS=avx-vnni: this CPU (or this build) cannot run that path; it can run avx2, go"},
		{"go", all, false, false, false, PathGo, ""},
		{"go", []string{PathGo}, false, false, false, PathGo, ""},
		// Not runnable here, or not a path: the best runs, and the
		// error names the variable and the paths there are.
		{"avx512-vnni", avx2, true, false, false, PathAVX2, "ATTNX_KERNELS=avx512-vnni: this CPU (or this build) cannot run that path; it can run avx2, go"},
		{"sse", all, true, true, true, PathVNNI, `ATTNX_KERNELS="sse": want auto, avx512-vnni, avx512f, avx-vnni, avx2, go`},
	} {
		asm, panels, vnni, path, err := choosePath(c.want, c.can)
		if asm != c.asm || panels != c.panels || vnni != c.vnni || path != c.path {
			t.Errorf("choosePath(%q, %v) = %v %v %v %s, want %v %v %v %s", c.want, c.can, asm, panels, vnni, path, c.asm, c.panels, c.vnni, c.path)
		}
		if (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("choosePath(%q, %v): error %v, want %q", c.want, c.can, err, c.err)
		}
	}
}

// TestPathInUse: the flags the kernels test agree with Path, and the path
// is one this CPU runs (make test-kernel-paths runs this under each
// ATTNX_KERNELS value).
func TestPathInUse(t *testing.T) {
	if err := PathError(); err != nil {
		t.Fatal(err)
	}
	p := Path()
	if !slices.Contains(Paths(), p) || useAsm != (p != PathGo) || usePanels != (p == PathAVX512 || p == PathVNNI) || useVNNI != (p == PathVNNI) || useVexVNNI != (p == PathAVXVNNI) || HasInt8() != useVNNI {
		t.Errorf("path %s of %v: asm %v, panels %v, vnni %v", p, Paths(), useAsm, usePanels, useVNNI)
	}
	if want := strings.TrimSpace(strings.ToLower(os.Getenv(EnvPath))); want != "" && want != "auto" && want != p {
		t.Errorf("%s=%s, path %s", EnvPath, want, p)
	}
	t.Logf("kernel path %s (this CPU runs %v)", p, Paths())
}
