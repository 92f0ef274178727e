package translate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/onnxrun"
)

// TestORTLibraryReachesONNXRuntime: Options.ORTLibrary is the file
// onnxrun is asked for. Once this process has loaded ONNX Runtime (first,
// so that the process-wide library is the real one for the tests after
// this), a Translator naming another file is refused with both names
// instead of silently running on the loaded one; naming the loaded file
// opens.
func TestORTLibraryReachesONNXRuntime(t *testing.T) {
	needORT(t)
	dir, _ := modelWithDefaults(t, nil)
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	_, err := Open(dir, Options{Backend: "ort", Threads: 1, ORTLibrary: other})
	if err == nil || !strings.Contains(err.Error(), other) {
		t.Fatalf("Open with ORTLibrary %s: got %v, want an error naming it", other, err)
	}
	tr, err := Open(dir, Options{Backend: "ort", Threads: 1, ORTLibrary: onnxrun.LibraryPath()})
	if err != nil {
		t.Fatalf("Open with the loaded library: %v", err)
	}
	tr.Close()
}
