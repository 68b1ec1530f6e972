//go:build !linux

package sandbox

// HardenProcess does nothing outside Linux.
func HardenProcess() error { return nil }

// Dumpable is true outside Linux.
func Dumpable() bool { return true }
