//go:build !cgo || !linux

package procstat

// trimC does nothing without cgo or off Linux: there is no C allocator
// to ask, or no portable way to.
func trimC() {}
