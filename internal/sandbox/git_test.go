package sandbox

import (
	"os/exec"
	"slices"
	"testing"
)

// The runtime's own git is confined only under allowlist: under allow and
// deny it runs as before; where the kernel gives no namespaces, the
// pinned fallback (deny) applies to it as to any command.
func TestGitConfinedOnlyUnderAllowlist(t *testing.T) {
	for _, tc := range []struct {
		net      Net
		ns       bool
		confined bool
		netArg   string
	}{
		{NetAllow, true, false, ""},
		{NetDeny, true, false, ""},
		{NetAllowlist, true, true, "allowlist"},
		{NetAllowlist, false, true, "deny"},
	} {
		sb, err := New(Options{Mode: ModeAuto, Net: tc.net, Exe: "/bin/true", TempRoot: t.TempDir(),
			Namespaces: func() bool { return tc.ns }})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "fetch")
		cleanup, err := sb.Git(t.Context(), cmd, []string{t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(cmd.Args, "--net")
		switch {
		case !tc.confined && cmd.Args[0] != "git":
			t.Errorf("%s: git was confined: %v", tc.net, cmd.Args)
		case tc.confined && (cmd.Path != "/bin/true" || i < 0 || cmd.Args[i+1] != tc.netArg):
			t.Errorf("%s (namespaces %v): %v, want the helper with --net %s", tc.net, tc.ns, cmd.Args, tc.netArg)
		}
		cleanup()
	}
}
