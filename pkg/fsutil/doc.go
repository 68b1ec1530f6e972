// Package fsutil keeps a crash from leaving files half-done: it writes
// files atomically (WriteFileAtomic: a reader sees the old file or the new
// one, never half of one), and it makes temporary directories held while
// their maker works in them (MkdirHeld), so that the next start removes
// the ones whose maker was killed (SweepUnheld) — the sandbox's private
// TMPDIRs, `agent install-deps`' work. It is under pkg/ so that pkg/deps
// and pkg/tools use it without an import of internal/.
package fsutil
