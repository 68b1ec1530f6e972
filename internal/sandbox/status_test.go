package sandbox

import (
	"bytes"
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
