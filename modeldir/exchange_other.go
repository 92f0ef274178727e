//go:build !linux && !darwin

package modeldir

// exchange is not available on this system: swapIn uses its rename
// fallback (see swapIn).
func exchange(a, b string) error { return errNoExchange }
