package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// The helper's own binary is used when it sits beside the runtime's as a
// regular executable file nobody else may write; anything else falls back
// to the runtime's binary.
func TestHelperBeside(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "agent")
	if err := os.WriteFile(exe, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, HelperBinary)
	if got := helperBeside(exe); got != exe {
		t.Fatalf("no helper beside: %s, want the runtime's binary", got)
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode
		want string
	}{
		{"executable", 0o755, helper},
		{"not executable", 0o644, exe},
		{"group-writable", 0o775, exe},
		{"world-writable", 0o757, exe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(helper, []byte("#!/bin/true\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(helper, tc.mode); err != nil {
				t.Fatal(err)
			}
			if got := helperBeside(exe); got != tc.want {
				t.Fatalf("helper %v: %s, want %s", tc.mode, got, tc.want)
			}
		})
	}
	if err := os.Remove(helper); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/true", helper); err != nil {
		t.Fatal(err)
	}
	if got := helperBeside(exe); got != exe {
		t.Fatalf("a symlink as the helper: %s, want the runtime's binary", got)
	}
}

// The runtime's helper is the one beside its binary, looked up once: every
// sandbox of the process (the simulator builds one per scenario) gets the
// same answer without asking the file system again.
func TestHelperOfRuntime(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got, err := helperOfRuntime()
	if err != nil || got != helperBeside(exe) {
		t.Fatalf("helperOfRuntime() = %q, %v; want %q", got, err, helperBeside(exe))
	}
	if again, err := helperOfRuntime(); again != got || err != nil {
		t.Fatalf("again: %q, %v; want %q", again, err, got)
	}
}
