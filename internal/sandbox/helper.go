package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// policy is what the helper applies, parsed from its arguments.
type policy struct {
	rw, ro   []string
	landlock int
	net      Net
	cgroup   string
	limits   Limits
	path     string
	argv     []string
	// inner marks the second process of the helper: the one that
	// confines itself and execs the command (see Main).
	inner bool
	// grace is how long the command gets between a SIGTERM passed on to
	// it and SIGKILL.
	grace time.Duration
	// watchFD, when not 0, is where the supervisor reports the process
	// groups of the command's processes (see watch): the kernel does not
	// scope signals, and the command could kill the supervisor.
	watchFD int
	// relayFD, when not 0, is the relay socket of a command under
	// NetAllowlist: the supervisor passes there each connection the
	// command makes to its proxy address (see startRelay).
	relayFD int
	// handoffFD, when not 0, is where the second process hands the
	// listener of the command's proxy address to the supervisor.
	handoffFD int
	// probe asks only whether the namespaces work (probeNamespaces).
	probe bool
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// parsePolicy reads the helper's arguments (everything after
// HelperCommand), as Sandbox.confine writes them.
func parsePolicy(args []string) (*policy, error) {
	p := &policy{net: NetAllow}
	fs := flag.NewFlagSet(HelperCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var((*listFlag)(&p.rw), "rw", "writable tree")
	fs.Var((*listFlag)(&p.ro), "ro", "read-only tree or file")
	fs.IntVar(&p.landlock, "landlock", 0, "Landlock ABI to enforce")
	net := fs.String("net", string(NetAllow), "allow or deny")
	fs.StringVar(&p.cgroup, "cgroup", "", "pids cgroup to join")
	fs.IntVar(&p.limits.CPU, "cpu", 0, "RLIMIT_CPU seconds")
	fs.Int64Var(&p.limits.AddressSpace, "as", 0, "RLIMIT_AS bytes")
	fs.IntVar(&p.limits.Procs, "nproc", 0, "RLIMIT_NPROC")
	fs.Int64Var(&p.limits.FileSize, "fsize", 0, "RLIMIT_FSIZE bytes")
	fs.StringVar(&p.path, "path", "", "the program to exec")
	fs.BoolVar(&p.inner, innerFlag, false, "confine this process and exec the command (the supervisor's child)")
	fs.DurationVar(&p.grace, "grace", 0, "time between a SIGTERM passed on and SIGKILL")
	fs.IntVar(&p.watchFD, "watch-fd", 0, "descriptor to report the command's process groups on")
	fs.IntVar(&p.relayFD, "relay-fd", 0, "descriptor to pass the command's proxy connections on")
	fs.IntVar(&p.handoffFD, "handoff-fd", 0, "descriptor to hand the proxy address's listener to the supervisor on")
	fs.BoolVar(&p.probe, probeFlag, false, "bring the loopback up and exit (the namespace probe)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	p.net = Net(*net)
	p.argv = fs.Args()
	switch {
	case p.probe:
		return p, nil
	case p.path == "":
		return nil, errors.New("no --path")
	case len(p.argv) == 0:
		return nil, errors.New("no command after --")
	case p.net != NetAllow && p.net != NetDeny && p.net != NetAllowlist:
		return nil, fmt.Errorf("--net %q", p.net)
	}
	return p, nil
}

// innerFlag marks the helper's second process; probeFlag the namespace
// probe.
const (
	innerFlag = "inner"
	probeFlag = "probe-netns"
)

// Main is the helper, run as `<binary> sandbox-exec [rules] -- argv...`,
// in two processes.
//
// The first, the supervisor, applies the limits and the pids group to
// itself, becomes a child subreaper, and starts the second as its child:
// the same binary with --inner, which applies no_new_privs and Landlock
// to itself and execs the command. The command inherits it all. The
// supervisor waits for the command, then kills whatever it left behind —
// a process started with setsid or double-forked included: as the
// subreaper, the supervisor inherits every orphan below it — and exits
// as the command did, with its status or by its signal. Nothing the
// command starts outlives it, as root or not, with or without a cgroup.
//
// The supervisor stays outside the command's Landlock domain: where the
// kernel scopes signals (Landlock ABI 6), nothing the command runs can
// kill it to set its orphans free, nor ptrace it. Below ABI 6 the command
// can kill it: there the supervisor reports to the runtime the process
// groups of its descendants as it sees them (--watch-fd, see watch), and
// the runtime kills those when the command has ended, unless the
// supervisor said it ended everything itself. A SIGTERM, SIGINT,
// SIGHUP or SIGQUIT sent to it is passed on to the command, which is
// killed --grace later (at once by default: a Bash call that timed out),
// and what it left is killed as above.
//
// Main returns only on failure, with the exit status to use (126, as a
// shell does for a command it cannot execute), after saying why on
// stderr; the command never runs unconfined.
func Main(args []string) int {
	p, err := parsePolicy(args)
	switch {
	case err == nil && p.probe:
		return probe(p.inner)
	case err == nil && p.inner:
		env := os.Environ()
		if p.handoffFD > 0 {
			var addr string
			if addr, err = listenInside(p.handoffFD); err == nil {
				env = withProxy(env, addr)
			}
		}
		if err == nil && p.net == NetAllowlist {
			err = dropCapabilities()
		}
		if err == nil {
			err = p.confine()
		}
		if err == nil {
			err = execve(p.path, p.argv, env)
		}
	case err == nil:
		err = p.supervise(args)
	}
	fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
	return 126
}

// IsHelper reports whether args (os.Args) ask for the helper; main and
// the TestMains that re-execute their binary call Main then.
func IsHelper(args []string) bool {
	return len(args) > 1 && args[1] == HelperCommand
}
