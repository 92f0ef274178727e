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
