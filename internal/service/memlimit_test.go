package service

import (
	"io/fs"
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestMemoryLimitFromTheCgroup(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 limit", map[string]string{"/sys/fs/cgroup/memory.max": "536870912\n"}, 536870912},
		{"v2 no limit", map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"v1 limit", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"}, 268435456},
		{"v1 no limit", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"no cgroup", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := cgroupMemoryLimit(files(tc.files)); got != tc.want {
				t.Fatalf("limit = %d, want %d", got, tc.want)
			}
		})
	}

	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	log := slog.New(slog.DiscardHandler)
	env := func(v string) func(string) string { return func(string) string { return v } }
	limited := files(map[string]string{"/sys/fs/cgroup/memory.max": "536870912"})
	if got := applyMemoryLimit(env(""), limited, log); got != 402653184 || debug.SetMemoryLimit(-1) != 402653184 {
		t.Fatalf("soft limit = %d (runtime %d), want 75%% of 512 MiB", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(before)
	if got := applyMemoryLimit(env("300MiB"), limited, log); got != 0 || debug.SetMemoryLimit(-1) != before {
		t.Fatal("GOMEMLIMIT set: the cgroup's limit must not replace it")
	}
}
