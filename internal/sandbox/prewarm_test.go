//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProbeHelper writes a helper that records each run (its arguments
// and its environment) in a log beside it and exits with code.
func fakeProbeHelper(t *testing.T, code int) (exe, log string) {
	t.Helper()
	dir := t.TempDir()
	exe, log = filepath.Join(dir, "helper"), filepath.Join(dir, "runs.log")
	script := "#!/bin/sh\necho \"run $* env=$(env | tr '\\n' ' ')\" >> " + log + "\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(exe, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return exe, log
}

func runs(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// A service's Prewarm starts the namespace probe; New takes its answer
// without probing again, and so does every later sandbox of the process
// with that helper. The helper is asked with none of the runtime's
// environment.
func TestPrewarmProbesOnce(t *testing.T) {
	t.Setenv("AGENT_TEST_CREDENTIAL", "sk-never-in-a-helper")
	for _, tc := range []struct {
		code   int
		netns  bool
		status string
	}{{0, true, "net allowlist"}, {1, false, "no network namespace"}} {
		exe, log := fakeProbeHelper(t, tc.code)
		o := Options{Mode: ModeAuto, Net: NetAllowlist, Exe: exe, LandlockABI: func() int { return 7 }}
		Prewarm(o)
		for range 3 {
			sb, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if sb.netns != tc.netns || !strings.Contains(sb.Status().String(), tc.status) {
				t.Fatalf("exit %d: netns = %v, status %q", tc.code, sb.netns, sb.Status())
			}
		}
		got := runs(t, log)
		if len(got) != 1 || !strings.HasPrefix(got[0], "run "+HelperCommand+" --"+probeFlag) {
			t.Fatalf("exit %d: probe runs = %q, want one", tc.code, got)
		}
		if strings.Contains(got[0], "sk-never-in-a-helper") {
			t.Fatalf("the probe's helper got the runtime's environment: %q", got[0])
		}
	}
}

// Without Prewarm, New probes; a sandbox off or not on the allowlist
// network asks nothing.
func TestPrewarmOnlyWhatNewAsks(t *testing.T) {
	exe, log := fakeProbeHelper(t, 0)
	for _, o := range []Options{
		{Mode: ModeOff, Net: NetAllowlist, Exe: exe},
		{Mode: ModeAuto, Net: NetDeny, Exe: exe},
		{Mode: ModeAuto, Net: NetAllow, Exe: exe},
		{Mode: ModeAuto, Net: NetAllowlist, Exe: exe, Namespaces: func() bool { return true }},
	} {
		Prewarm(o)
	}
	if got := runs(t, log); len(got) != 1 || got[0] != "" {
		t.Fatalf("probes without an allowlist sandbox: %q", got)
	}
	if _, err := New(Options{Mode: ModeAuto, Net: NetAllowlist, Exe: exe, LandlockABI: func() int { return 7 }}); err != nil {
		t.Fatal(err)
	}
	if got := runs(t, log); len(got) != 1 || !strings.HasPrefix(got[0], "run ") {
		t.Fatalf("New's probe runs = %q, want one", got)
	}
}
