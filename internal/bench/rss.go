package bench

import (
	"os"

	"github.com/attnx/attnx/internal/procstat"
)

// resetPeakRSS frees what Go can, returns glibc's free heap pages to the
// system (malloc_trim: ORT's freed arenas would otherwise stay resident and
// inflate every later engine's figure), and resets the kernel's peak-RSS mark
// (VmHWM) of this process (Linux: writing 5 to /proc/self/clear_refs), so
// that peakRSSMB reports the peak of what runs next. It reports whether the
// reset worked; if not, peakRSSMB is the process's lifetime peak.
func resetPeakRSS() bool {
	procstat.ReleaseFreeMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSSMB returns VmHWM from /proc/self/status in MiB, 0 when unknown.
func peakRSSMB() float64 { return float64(procstat.Bytes("VmHWM")) / (1 << 20) }
