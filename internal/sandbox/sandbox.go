package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/persona-runtime/agent/pkg/fsutil"
)

// Mode is AGENT_SANDBOX.
type Mode string

// The sandbox modes.
const (
	// ModeAuto confines with what the kernel offers and says what that is.
	ModeAuto Mode = "auto"
	// ModeRequired refuses to start without Landlock.
	ModeRequired Mode = "required"
	// ModeOff runs commands unconfined: unsafe, for debugging only.
	ModeOff Mode = "off"
)

// Net is AGENT_SANDBOX_NET.
type Net string

// The network policies.
const (
	NetAllow Net = "allow"
	NetDeny  Net = "deny"
	// NetAllowlist gives each command a network of its own whose only way
	// out is the runtime's egress proxy (Options.Egress); where the kernel
	// gives no namespaces it works as NetDeny.
	NetAllowlist Net = "allowlist"
)

// Egress is the runtime's egress proxy as the sandbox sees it: it serves
// each connection a command under NetAllowlist makes to its proxy
// address. ctx is the call's (Command's, with its thread), or the
// background for a tool server; it ends when the command does.
type Egress interface {
	ServeConn(ctx context.Context, conn net.Conn)
}

// HelperCommand is the hidden subcommand of the runtime's binary that
// applies the rules and execs the command.
const HelperCommand = "sandbox-exec"

// ErrNoLandlock is the refusal of ModeRequired on a kernel without
// Landlock.
var ErrNoLandlock = errors.New("sandbox required but the kernel has no Landlock")

// Limits are the resource limits of a confined command (setrlimit in the
// helper, inherited by everything the command starts). Zero means no
// limit.
type Limits struct {
	// CPU is the CPU time of each process, in seconds (RLIMIT_CPU): past
	// it the process gets SIGXCPU, five seconds later SIGKILL.
	CPU int
	// AddressSpace caps each process's virtual memory, in bytes
	// (RLIMIT_AS).
	AddressSpace int64
	// Procs caps the processes of the user (RLIMIT_NPROC; the kernel does
	// not apply it to root, where a pids cgroup is used instead).
	Procs int
	// FileSize caps the size of any file a process writes, in bytes
	// (RLIMIT_FSIZE): past it the write fails and the process gets
	// SIGXFSZ.
	FileSize int64
}

// Default limits. Each is far above honest work and far below what takes
// a host down.
const (
	// DefaultAddressSpace leaves room for runtimes that reserve large
	// virtual ranges up front (V8 reserves a 4 GiB pointer cage), while a
	// runaway allocation stops well before a small host's memory.
	DefaultAddressSpace = 8 << 30
	// DefaultProcs is per user, across every process of the runtime's uid
	// (its own threads count): wide enough for builds running in parallel
	// threads, narrow enough that a fork bomb stops long before the
	// kernel's pid table (32768 by default) fills.
	DefaultProcs = 2048
	// DefaultFileSize stops a runaway write (yes > file) at 1 GiB per file.
	DefaultFileSize = 1 << 30
	// DefaultCgroupPids caps the tasks of one command where a pids cgroup
	// is used (root, where RLIMIT_NPROC does not apply).
	DefaultCgroupPids = 256
)

// Options configure a Sandbox.
type Options struct {
	Mode Mode
	Net  Net
	// Exe is the binary with HelperCommand; empty means os.Executable().
	Exe string
	// ReadOnly are the trees (or files) every confined command may read
	// besides the system: the skills and knowledge folders, git's config.
	// Missing ones are skipped.
	ReadOnly []string
	// TempRoot is where private temporary directories are made; empty
	// means os.TempDir(). The first New over a root in a process removes
	// the ones there that runtimes killed mid-command left (tempdir.go).
	TempRoot string
	// Limits of a Bash command (CPU is set per call from its timeout) and
	// of a tool server; zero values take the defaults above.
	Limits Limits
	// LandlockABI probes the Landlock ABI the kernel offers; nil asks the
	// kernel (LandlockABI). Tests set it to play a kernel without
	// Landlock on one that has it.
	LandlockABI func() int
	// Egress serves the proxy connections under NetAllowlist; nil refuses
	// them all (closed at once).
	Egress Egress
	// Namespaces probes whether the kernel gives a command user and
	// network namespaces; nil asks the kernel. Tests set it to play a
	// kernel without them.
	Namespaces func() bool
}

// Sandbox starts commands confined. A Sandbox is safe for concurrent use.
type Sandbox struct {
	mode     Mode
	net      Net
	exe      string
	abi      int
	readOnly []string
	tempRoot string
	limits   Limits
	pids     *pidsLimiter
	egress   Egress
	// netns is false under NetAllowlist where the kernel gives no
	// namespaces: commands then run as under NetDeny.
	netns bool
}

// New probes the kernel and returns the sandbox of o; with ModeRequired
// and no Landlock it fails with ErrNoLandlock.
func New(o Options) (*Sandbox, error) {
	switch o.Mode {
	case "":
		o.Mode = ModeAuto
	case ModeAuto, ModeRequired, ModeOff:
	default:
		return nil, fmt.Errorf("AGENT_SANDBOX: unknown value %q (want auto, required or off)", o.Mode)
	}
	switch o.Net {
	case "":
		o.Net = NetAllow
	case NetAllow, NetDeny, NetAllowlist:
	default:
		return nil, fmt.Errorf("AGENT_SANDBOX_NET: unknown value %q (want allowlist, allow or deny)", o.Net)
	}
	s := &Sandbox{mode: o.Mode, net: o.Net, exe: o.Exe, tempRoot: o.TempRoot, limits: o.Limits, egress: o.Egress}
	if s.egress == nil {
		s.egress = refuseAll{}
	}
	if s.tempRoot == "" {
		s.tempRoot = os.TempDir()
	}
	// What runtimes killed mid-command left (a runtime with ModeOff may
	// follow one without).
	sweepTempsOnce(s.tempRoot)
	if s.mode == ModeOff {
		return s, nil
	}
	probe := o.LandlockABI
	if probe == nil {
		probe = LandlockABI
	}
	s.abi = probe()
	if s.abi == 0 && s.mode == ModeRequired {
		return nil, ErrNoLandlock
	}
	if s.exe == "" {
		exe, err := helperOfRuntime()
		if err != nil {
			return nil, err
		}
		s.exe = exe
	}
	if s.net == NetAllowlist {
		if o.Namespaces != nil {
			s.netns = o.Namespaces()
		} else {
			s.netns = namespacesFor(s.exe).wait()
		}
	}
	for _, p := range o.ReadOnly {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: read-only path %s: %w", p, err)
		}
		s.readOnly = append(s.readOnly, abs)
	}
	if s.limits.AddressSpace == 0 {
		s.limits.AddressSpace = DefaultAddressSpace
	}
	if s.limits.Procs == 0 {
		s.limits.Procs = DefaultProcs
	}
	if s.limits.FileSize == 0 {
		s.limits.FileSize = DefaultFileSize
	}
	if os.Geteuid() == 0 {
		s.pids = sharedPidsLimiter()
	}
	return s, nil
}

// refuseAll is the Egress of a sandbox given none: every connection is
// closed at once.
type refuseAll struct{}

func (refuseAll) ServeConn(_ context.Context, c net.Conn) { c.Close() }

// HelperBinary is the name of the helper's own binary (cmd/agent-sandbox),
// used when it is installed beside the runtime's.
const HelperBinary = "agent-sandbox"

// helperBeside returns the helper binary installed beside exe, or exe
// itself (which runs the helper as `exe sandbox-exec`). The small binary
// starts in a millisecond where the runtime's takes several; it is used
// only when it is a regular executable file with exe's owner, writable by
// nobody else — a helper runs before its own confinement.
func helperBeside(exe string) string {
	self, err := os.Stat(exe)
	if err != nil {
		return exe
	}
	helper := filepath.Join(filepath.Dir(exe), HelperBinary)
	fi, err := os.Lstat(helper)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || fi.Mode().Perm()&0o022 != 0 {
		return exe
	}
	if a, ok := self.Sys().(*syscall.Stat_t); ok {
		if b, ok := fi.Sys().(*syscall.Stat_t); !ok || a.Uid != b.Uid {
			return exe
		}
	}
	return helper
}

// helperOfRuntime is the helper New starts commands through when its
// options name none: the small one beside the runtime's binary, else the
// runtime's own. It is found once per process, as the kernel's answers
// are (the simulator builds a sandbox for every scenario).
var helperOfRuntime = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("sandbox: the runtime's own binary: %w", err)
	}
	return helperBeside(exe), nil
})

// Prewarm starts, in the background, what New asks the kernel for a
// sandbox of o: whether the helper gets a user and network namespace of
// its own (two helper processes, NetAllowlist only) and, as root, the
// pids controller (a cgroup made and removed). A service calls it first
// thing, so that the probes run beside the rest of its start (its
// database, its persona, the platform's auth.test) and New waits only for
// what is left of them. Calling it is optional. The answers are the
// process's, probed once: the kernel does not change while it runs.
func Prewarm(o Options) {
	if o.Mode == ModeOff || (o.Mode != "" && o.Mode != ModeAuto && o.Mode != ModeRequired) {
		return
	}
	if o.Net == NetAllowlist && o.Namespaces == nil {
		exe := o.Exe
		if exe == "" {
			var err error
			if exe, err = helperOfRuntime(); err != nil {
				return // New says so
			}
		}
		namespacesFor(exe)
	}
	if os.Geteuid() == 0 {
		go sharedPidsLimiter()
	}
}

// nsProbes holds each helper's namespace probe (probeNamespaces), made
// once per process: a *nsProbe by helper path.
var nsProbes sync.Map

// nsProbe is one helper's namespace probe: ok is set before done closes.
type nsProbe struct {
	done chan struct{}
	ok   bool
}

// namespacesFor returns exe's probe, started now unless it was before.
func namespacesFor(exe string) *nsProbe {
	p := &nsProbe{done: make(chan struct{})}
	if got, loaded := nsProbes.LoadOrStore(exe, p); loaded {
		return got.(*nsProbe)
	}
	go func() {
		defer close(p.done)
		p.ok = probeNamespaces(exe)
	}()
	return p
}

// wait returns the probe's answer once it has one.
func (p *nsProbe) wait() bool {
	<-p.done
	return p.ok
}

// The pids limiter is found (and proven, by making and removing a group)
// once per process: the hierarchy does not change while it runs, and the
// simulator builds a sandbox per scenario.
var (
	pidsOnce   sync.Once
	pidsShared *pidsLimiter
)

func sharedPidsLimiter() *pidsLimiter {
	pidsOnce.Do(func() { pidsShared = newPidsLimiter(DefaultCgroupPids) })
	return pidsShared
}

// Enforced reports whether commands are confined by Landlock.
func (s *Sandbox) Enforced() bool { return s.mode != ModeOff && s.abi > 0 }

// Command confines cmd, made by exec.Command and not yet started, as one
// Bash command of the thread whose workspace is workspace: it may write
// there and in a private TMPDIR, read the system and the read-only trees,
// and it gets the CPU limit of timeout. cmd's process is then the helper
// (see Main): when the command ends, so does everything it started, and
// a SIGTERM to cmd's process (Stop) kills it all at once. cleanup removes
// the private directory and the command's cgroup; call it once the
// command has exited.
//
// Under NetAllowlist the command's proxy connections are served by the
// Egress with ctx (its thread's turn), until cleanup.
func (s *Sandbox) Command(ctx context.Context, cmd *exec.Cmd, workspace string, timeout time.Duration) (cleanup func(), err error) {
	l := s.limits
	l.CPU = int(math.Ceil(timeout.Seconds()))
	return s.confine(ctx, cmd, []string{workspace}, nil, l, "", 0)
}

// ServerGrace is how long a confined tool server gets between the SIGTERM
// of its stop, passed on by the helper, and SIGKILL. A Bash command gets
// none: its stop is its timeout.
const ServerGrace = time.Second

// Server confines cmd as a long-lived stdio tool server: it may write
// state (its HOME) and its private TMPDIR, read the system, the read-only
// trees and readable (its own program's folder), and it has no CPU limit.
func (s *Sandbox) Server(cmd *exec.Cmd, state string, readable []string) (cleanup func(), err error) {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: tool server state: %w", err)
	}
	l := s.limits
	l.CPU = 0
	l.AddressSpace = 0 // servers run on node and the like: no useful bound
	return s.confine(context.Background(), cmd, []string{state}, readable, l, state, ServerGrace)
}

// Git confines cmd, one git command of the runtime's own (install-deps,
// the knowledge bases, the skills sync), under NetAllowlist: it may write
// writable (the checkouts and clones it works in) and its private TMPDIR,
// read the system, the read-only trees and readable (git's configuration
// and credential files), and reaches the network only through the egress
// proxy, with ctx (a thread's turn, or none: no card). It has no CPU or
// address-space limit (a clone may be large and slow). Under NetAllow or
// NetDeny, or with ModeOff, cmd is left as it is (git runs as before);
// where the kernel gives no namespaces it runs as under NetDeny.
func (s *Sandbox) Git(ctx context.Context, cmd *exec.Cmd, writable, readable []string) (cleanup func(), err error) {
	if s.net != NetAllowlist {
		return func() {}, nil
	}
	l := s.limits
	l.CPU = 0
	l.AddressSpace = 0
	return s.confine(ctx, cmd, writable, readable, l, "", 0)
}

// confine rewrites cmd to start the helper with the rules, the command's
// path and its arguments.
func (s *Sandbox) confine(ctx context.Context, cmd *exec.Cmd, writable, readable []string, l Limits, home string, grace time.Duration) (func(), error) {
	if s.mode == ModeOff {
		return func() {}, nil
	}
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if cmd.Process != nil {
		return nil, errors.New("sandbox: the command has already started")
	}
	private, err := fsutil.MkdirHeld(s.tempRoot, tempPrefix)
	if err != nil {
		return nil, fmt.Errorf("sandbox: private temporary directory: %w", err)
	}
	tmp := private.Path
	var group string
	if s.pids != nil {
		if group, err = s.pids.create(); err != nil {
			private.Remove()
			return nil, err
		}
	}
	var watch *watcher
	if s.abi < watchBelow {
		if watch, err = newWatcher(); err != nil {
			if group != "" {
				s.pids.remove(group)
			}
			private.Remove()
			return nil, fmt.Errorf("sandbox: the helper's report: %w", err)
		}
	}
	var rl *relay
	if s.net == NetAllowlist && s.netns {
		if rl, err = newRelay(); err != nil {
			if watch != nil {
				watch.kill()
			}
			if group != "" {
				s.pids.remove(group)
			}
			private.Remove()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	cleanup := func() {
		if rl != nil {
			rl.close()
		}
		if watch != nil {
			watch.kill()
		}
		if group != "" {
			s.pids.remove(group)
		}
		private.Remove()
	}

	args := []string{s.exe, HelperCommand}
	for _, w := range append(writable, tmp) {
		args = append(args, "--rw", w)
	}
	for _, r := range append(append([]string(nil), s.readOnly...), readable...) {
		args = append(args, "--ro", r)
	}
	if s.abi > 0 {
		args = append(args, "--landlock", strconv.Itoa(s.abi))
	}
	switch {
	case s.net == NetDeny || (s.net == NetAllowlist && !s.netns):
		args = append(args, "--net", string(NetDeny))
	case s.net == NetAllowlist:
		args = append(args, "--net", string(NetAllowlist))
		cmd.ExtraFiles = append(cmd.ExtraFiles, rl.theirs)
		args = append(args, "--relay-fd", strconv.Itoa(2+len(cmd.ExtraFiles)))
		rl.serve(ctx, s.egress)
	}
	if group != "" {
		args = append(args, "--cgroup", group)
	}
	if grace > 0 {
		args = append(args, "--grace", grace.String())
	}
	if watch != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, watch.w)
		args = append(args, "--watch-fd", strconv.Itoa(2+len(cmd.ExtraFiles)))
	}
	args = append(args,
		"--cpu", strconv.Itoa(l.CPU), "--as", strconv.FormatInt(l.AddressSpace, 10),
		"--nproc", strconv.Itoa(l.Procs), "--fsize", strconv.FormatInt(l.FileSize, 10),
		"--path", cmd.Path, "--")
	args = append(args, cmd.Args...)

	env := make([]string, 0, len(cmd.Env)+2)
	for _, kv := range cmd.Env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TMPDIR" || (home != "" && k == "HOME") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TMPDIR="+tmp)
	if home != "" {
		env = append(env, "HOME="+home)
	}
	cmd.Path, cmd.Args, cmd.Env = s.exe, args, env
	return cleanup, nil
}
