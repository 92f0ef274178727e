package procstat

import (
	"os"
	"testing"
)

func TestRSSIsPlausible(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status on this system")
	}
	rss, peak := RSS(), Bytes("VmHWM")
	if rss < 1<<20 || rss > 1<<40 {
		t.Errorf("RSS %d bytes is implausible", rss)
	}
	if peak < rss {
		t.Errorf("peak RSS %d below current RSS %d", peak, rss)
	}
	if Bytes("NoSuchField") != 0 {
		t.Error("an absent field must read as 0")
	}
}

// TestReleaseFreeMemory: 64 MiB the program touched and dropped are no
// longer resident after ReleaseFreeMemory. (The C heap's part, malloc_trim,
// is exercised by the leak tests in reliability/, whose ONNX Runtime
// buffers it releases.)
func TestReleaseFreeMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status on this system")
	}
	ReleaseFreeMemory()
	before := RSS()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if grown := RSS(); grown < before+32<<20 {
		t.Fatalf("RSS %d after touching 64 MiB, was %d", grown, before)
	}
	buf = nil
	ReleaseFreeMemory()
	if after := RSS(); after > before+16<<20 {
		t.Errorf("RSS %d MiB after releasing 64 MiB, was %d MiB before", after>>20, before>>20)
	}
}
