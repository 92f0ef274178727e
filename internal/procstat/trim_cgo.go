//go:build cgo && linux

package procstat

// #include <malloc.h>
// static void trim(void) {
// #ifdef __GLIBC__
// 	malloc_trim(0);
// #endif
// }
import "C"

// trimC returns the C heap's free pages to the system (glibc only).
func trimC() { C.trim() }
