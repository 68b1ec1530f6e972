package fake

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// initTraceEnv marks the run of a test binary that InitAllocs starts: the
// test calling InitAllocs returns at once there.
const initTraceEnv = "FAKE_INITTRACE"

// InitAllocs runs the test binary again, running no test, and returns the
// bytes each package's initialisation allocated, by import path, as the
// runtime's inittrace reports them (GODEBUG=inittrace=1; a package with no
// initialisation work is not listed). ok is false in that second run: the
// calling test returns then.
func InitAllocs(t testing.TB) (allocs map[string]int, ok bool) {
	t.Helper()
	if os.Getenv(initTraceEnv) != "" {
		return nil, false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", initTraceEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inittrace run: %v\n%s", err, out)
	}
	allocs = map[string]int{}
	for line := range strings.Lines(string(out)) {
		// init github.com/yuin/goldmark/util @24 ms, 0.023 ms clock, 144 bytes, 4 allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil || f[8] != "bytes," {
			t.Fatalf("unreadable inittrace line %q", line)
		}
		allocs[f[1]] = n
	}
	if len(allocs) == 0 {
		t.Fatalf("no inittrace lines:\n%s", out)
	}
	return allocs, true
}
