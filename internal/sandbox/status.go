package sandbox

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
)

// Status is what a Sandbox enforces, for the startup line and the
// metrics.
type Status struct {
	Mode Mode
	// Landlock is the Landlock ABI enforced, 0 for none.
	Landlock int
	Net      Net
	// NetEnforced is false when Net is deny but the kernel has no
	// Landlock TCP rules (ABI < 4).
	NetEnforced bool
	// NoNamespace is true when Net is allowlist but the kernel gives
	// commands no network namespace: they run as under deny.
	NoNamespace bool
	// Pids says what bounds the processes of a command: "cgroup",
	// "rlimit", or "none" (root without a pids cgroup: only the
	// timeout).
	Pids string
}

// Status reports what s enforces.
func (s *Sandbox) Status() Status {
	st := Status{Mode: s.mode, Landlock: s.abi, Net: s.net, Pids: "none"}
	if s.mode == ModeOff {
		return st
	}
	st.NoNamespace = s.net == NetAllowlist && !s.netns
	st.NetEnforced = s.net == NetAllow || (s.net == NetAllowlist && s.netns) || s.abi >= 4
	switch {
	case s.pids != nil:
		st.Pids = "cgroup"
	case os.Geteuid() != 0:
		st.Pids = "rlimit"
	}
	return st
}

// String is the startup line: "sandbox: landlock abi 7, net deny",
// "sandbox: unavailable, Bash runs unconfined" or "sandbox: off, …".
func (st Status) String() string {
	switch {
	case st.Mode == ModeOff:
		return "sandbox: off (AGENT_SANDBOX=off), Bash and tool servers run unconfined: unsafe"
	case st.Landlock == 0:
		return "sandbox: unavailable, Bash runs unconfined"
	}
	s := fmt.Sprintf("sandbox: landlock abi %d, net %s", st.Landlock, st.Net)
	if st.NoNamespace {
		s = fmt.Sprintf("sandbox: landlock abi %d, net deny (no network namespace: allowlist unavailable)", st.Landlock)
	}
	if !st.NetEnforced {
		s += " requested but not enforced (the kernel has no Landlock TCP rules, abi < 4)"
	}
	return s
}

// NetLabel is the network policy as the startup line's attributes and
// agent_sandbox_info say it: allowlist, allow, deny, deny-no-namespace
// (allowlist asked for, working as deny: no namespaces), or
// deny-unenforced when deny was in force and the kernel cannot enforce it.
func (st Status) NetLabel() string {
	net := st.Net
	if st.NoNamespace {
		net = NetDeny
	}
	if !st.NetEnforced && net == NetDeny {
		return string(net) + "-unenforced"
	}
	if st.NoNamespace {
		return "deny-no-namespace"
	}
	return string(st.Net)
}

// Labels are the label values of agent_sandbox_info, in its order: mode,
// landlock_abi, net and pids.
func (st Status) Labels() []string {
	return []string{string(st.Mode), strconv.Itoa(st.Landlock), st.NetLabel(), st.Pids}
}

// BypassRefusal is why no thread may run in the bypass permission mode
// under st, or "" when bypass may run. A thread in bypass runs every tool
// without a card, so only the kernel sandbox stands between the model and
// the host: bypass runs where Landlock is enforced, or where the operator
// switched the sandbox off on purpose (AGENT_SANDBOX=off says in so many
// words that commands run unconfined). It is refused under
// AGENT_SANDBOX=auto on a kernel without Landlock (AGENT_SANDBOX=required
// without Landlock does not start at all: New fails). An empty Mode is
// auto, as in New.
func (st Status) BypassRefusal() string {
	if (st.Mode != ModeAuto && st.Mode != "") || st.Landlock > 0 {
		return ""
	}
	return "bypass needs the kernel sandbox and this kernel has no Landlock (AGENT_SANDBOX=auto): " +
		"set AGENT_SANDBOX=off to run bypass unconfined on purpose"
}

// Log says once what st enforces: the startup line, a warning when
// commands are not confined by Landlock or the network policy asked for is
// not enforced.
func (st Status) Log(log *slog.Logger) {
	attrs := []any{"mode", st.Mode, "landlock_abi", st.Landlock, "net", st.NetLabel(), "pids", st.Pids}
	if st.Mode != ModeOff && st.Landlock > 0 && st.NetEnforced {
		log.Info(st.String(), attrs...)
	} else {
		log.Warn(st.String(), attrs...)
	}
}
