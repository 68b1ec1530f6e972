// Package fsutil holds the file operations the runtime needs to be atomic.
package fsutil
