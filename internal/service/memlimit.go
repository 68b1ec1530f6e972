package service

import (
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryShare is the part of the container's memory limit given to the Go
// heap as its soft limit: the rest is for the runtime's own non-heap memory
// and for what the agent runs beside it in the same cgroup (Bash, git, tool
// servers).
const memoryShare = 0.75

// cgroupLimitFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// applyMemoryLimit gives the Go heap a soft limit from the container's
// memory limit, so that the collector works harder as the limit nears
// instead of the kernel killing the process. GOMEMLIMIT, when set, wins
// (the Go runtime has applied it). It returns the limit set, 0 for none.
func applyMemoryLimit(getenv func(string) string, readFile func(string) ([]byte, error), log *slog.Logger) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, file := cgroupMemoryLimit(readFile)
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * memoryShare)
	debug.SetMemoryLimit(soft)
	log.Info("memory limit", "cgroup_limit_bytes", limit, "go_soft_limit_bytes", soft, "from", file)
	return soft
}

// cgroupMemoryLimit reads the container's memory limit in bytes; 0 when
// there is none ("max", a v1 "unlimited" value, or no cgroup files).
func cgroupMemoryLimit(readFile func(string) ([]byte, error)) (int64, string) {
	for _, f := range cgroupLimitFiles {
		b, err := readFile(f)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(v, 10, 64)
		// cgroup v1 says "no limit" with a huge number near 2^63.
		if v == "max" || err != nil || n <= 0 || n >= 1<<60 {
			return 0, f
		}
		return n, f
	}
	return 0, ""
}
