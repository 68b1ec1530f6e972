package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	p.net = Net(*net)
	p.argv = fs.Args()
	switch {
	case p.path == "":
		return nil, errors.New("no --path")
	case len(p.argv) == 0:
		return nil, errors.New("no command after --")
	case p.net != NetAllow && p.net != NetDeny:
		return nil, fmt.Errorf("--net %q", p.net)
	}
	return p, nil
}

// Main is the helper, run as `<binary> sandbox-exec [rules] -- argv...`:
// it applies the rules to its own process and execs the command. It
// returns only on failure, with the exit status to use (126, as a shell
// does for a command it cannot execute), after saying why on stderr; the
// command never runs unconfined.
func Main(args []string) int {
	p, err := parsePolicy(args)
	if err == nil {
		err = p.apply()
	}
	if err == nil {
		err = execve(p.path, p.argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
	return 126
}

// IsHelper reports whether args (os.Args) ask for the helper; main and
// the TestMains that re-execute their binary call Main then.
func IsHelper(args []string) bool {
	return len(args) > 1 && args[1] == HelperCommand
}
