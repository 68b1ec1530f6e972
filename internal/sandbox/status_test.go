package sandbox

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// The startup line is a warning whenever something asked for is not
// enforced, and agent_sandbox_info's labels say what is.
func TestStatusReport(t *testing.T) {
	for _, tt := range []struct {
		name   string
		st     Status
		labels []string
		level  string
	}{
		{"enforced", Status{Mode: ModeRequired, Landlock: 7, Net: NetDeny, NetEnforced: true, Pids: "rlimit"},
			[]string{"required", "7", "deny", "rlimit"}, "INFO"},
		{"net deny unenforced", Status{Mode: ModeAuto, Landlock: 3, Net: NetDeny, Pids: "cgroup"},
			[]string{"auto", "3", "deny-unenforced", "cgroup"}, "WARN"},
		{"no landlock", Status{Mode: ModeAuto, Net: NetAllow, NetEnforced: true, Pids: "rlimit"},
			[]string{"auto", "0", "allow", "rlimit"}, "WARN"},
		{"off", Status{Mode: ModeOff, Net: NetAllow, Pids: "none"},
			[]string{"off", "0", "allow", "none"}, "WARN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Labels(); !slices.Equal(got, tt.labels) {
				t.Errorf("Labels() = %q, want %q", got, tt.labels)
			}
			var buf bytes.Buffer
			tt.st.Log(slog.New(slog.NewTextHandler(&buf, nil)))
			line := buf.String()
			if !strings.Contains(line, "level="+tt.level) || !strings.Contains(line, tt.st.String()) ||
				!strings.Contains(line, "net="+tt.labels[2]) {
				t.Errorf("Log wrote %q, want level %s and the line %q", line, tt.level, tt.st.String())
			}
		})
	}
}

// Bypass is refused only where commands would run unconfined without the
// operator having said so: AGENT_SANDBOX=auto on a kernel without Landlock.
func TestStatusBypassRefusal(t *testing.T) {
	const refused = "bypass needs the kernel sandbox and this kernel has no Landlock (AGENT_SANDBOX=auto): " +
		"set AGENT_SANDBOX=off to run bypass unconfined on purpose"
	for _, tt := range []struct {
		mode Mode
		abi  int
		want string
	}{
		{ModeAuto, 0, refused},
		{"", 0, refused}, // an unset mode is auto
		{ModeAuto, 1, ""},
		{ModeAuto, 5, ""},
		{ModeAuto, 7, ""},
		{ModeRequired, 1, ""},
		{ModeRequired, 7, ""},
		{ModeRequired, 0, ""}, // New refuses it before anything runs
		{ModeOff, 0, ""},      // unconfined on purpose
		{ModeOff, 7, ""},
	} {
		t.Run(fmt.Sprintf("%s/abi%d", tt.mode, tt.abi), func(t *testing.T) {
			if got := (Status{Mode: tt.mode, Landlock: tt.abi}).BypassRefusal(); got != tt.want {
				t.Errorf("BypassRefusal() = %q, want %q", got, tt.want)
			}
		})
	}
}

// The status of a sandbox New built says the same: auto on a kernel
// without Landlock refuses bypass, off allows it.
func TestNewBypassRefusal(t *testing.T) {
	for _, tt := range []struct {
		mode    Mode
		abi     int
		refused bool
	}{
		{ModeAuto, 0, true},
		{"", 0, true},
		{ModeAuto, 3, false},
		{ModeRequired, 7, false},
		{ModeOff, 0, false},
	} {
		sb, err := New(Options{Mode: tt.mode, Exe: "/bin/true", LandlockABI: func() int { return tt.abi }})
		if err != nil {
			t.Fatalf("New(%q, abi %d): %v", tt.mode, tt.abi, err)
		}
		if got := sb.Status().BypassRefusal() != ""; got != tt.refused {
			t.Errorf("New(%q, abi %d).Status().BypassRefusal() refused = %v, want %v", tt.mode, tt.abi, got, tt.refused)
		}
	}
}
