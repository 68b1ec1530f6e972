// Package fsutil writes files atomically: a reader sees the old file or
// the new one, never half of one. It is under pkg/ so that pkg/deps and
// pkg/tools use it without an import of internal/.
package fsutil
