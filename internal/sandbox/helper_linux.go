//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// systemRO are the trees every confined command may read and execute:
// programs, libraries, configuration (name resolution and the CA store
// included), and where resolv.conf points on systemd hosts. Missing ones
// are skipped.
var systemRO = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/run/systemd/resolve"}

// devicesRW are the device files a command may open for reading and
// writing (shells redirect to /dev/null all the time); devicesRO only for
// reading. No other device, and nothing under /proc or /sys.
var (
	devicesRW = []string{"/dev/null", "/dev/zero", "/dev/full"}
	devicesRO = []string{"/dev/random", "/dev/urandom"}
)

// Access rights, intersected with what the ABI handles.
const (
	rightsRODir  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	rightsROFile = ll.AccessFSExecute | ll.AccessFSReadFile
	rightsFile   = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	// rightsDevice lets ioctl through on the few allowed devices (isatty
	// on /dev/null must answer ENOTTY, not EACCES).
	rightsDevice = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	// notInRW are never granted, even in the writable trees: making a
	// device node (root could mknod the disk and read it raw), ioctl on
	// devices.
	notInRW = ll.AccessFSMakeChar | ll.AccessFSMakeBlock | ll.AccessFSIoctlDev
)

// LandlockABI is the Landlock ABI version the kernel offers, 0 for none:
// asked once per process (the kernel's does not change while it runs).
func LandlockABI() int { return landlockABI() }

var landlockABI = sync.OnceValue(func() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
})

// abiConfigs are go-landlock's configurations by ABI version.
var abiConfigs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// limit puts the supervisor under the policy's cgroup and limits, which
// everything it starts inherits; and no_new_privs, which it keeps for
// itself (nothing it runs gains privileges through a setuid binary).
func (p *policy) limit() error {
	if p.cgroup != "" {
		if err := os.WriteFile(filepath.Join(p.cgroup, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fmt.Errorf("join the pids cgroup: %w", err)
		}
	}
	if err := p.limits.set(); err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
}

// confine puts the helper's second process under Landlock (which also
// sets no_new_privs), or no_new_privs alone without Landlock.
func (p *policy) confine() error {
	if p.landlock == 0 {
		// No Landlock: at least no privilege gain through setuid binaries.
		return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	return p.restrict()
}

// set applies the limits with setrlimit; a zero limit is left alone.
func (l Limits) set() error {
	for _, r := range []struct {
		name     string
		res      int
		soft     uint64
		hardPlus uint64
	}{
		// SIGXCPU at the soft limit, SIGKILL at the hard one.
		{"cpu", unix.RLIMIT_CPU, uint64(l.CPU), 5},
		{"address space", unix.RLIMIT_AS, uint64(l.AddressSpace), 0},
		{"processes", unix.RLIMIT_NPROC, uint64(l.Procs), 0},
		{"file size", unix.RLIMIT_FSIZE, uint64(l.FileSize), 0},
	} {
		if r.soft == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.res, &cur); err != nil {
			return fmt.Errorf("getrlimit %s: %w", r.name, err)
		}
		want := unix.Rlimit{Cur: r.soft, Max: r.soft + r.hardPlus}
		// Never raise a limit the runtime already runs under.
		if cur.Max != unix.RLIM_INFINITY && want.Max > cur.Max {
			want.Max = cur.Max
		}
		want.Cur = min(want.Cur, want.Max)
		if err := unix.Setrlimit(r.res, &want); err != nil {
			return fmt.Errorf("setrlimit %s: %w", r.name, err)
		}
	}
	return nil
}

// restrict enforces the Landlock domain at the policy's ABI.
func (p *policy) restrict() error {
	abi := min(p.landlock, len(abiConfigs))
	base := abiConfigs[abi-1]
	handled := base.HandledAccessFS
	args := []any{handled}
	if base.Scoped != 0 {
		args = append(args, base.Scoped)
	}
	if p.net == NetDeny && base.HandledAccessNet != 0 {
		// Handled with no rule: every TCP connect and bind is refused
		// (and UDP too from ABI 10).
		args = append(args, base.HandledAccessNet)
	}
	cfg, err := landlock.NewConfig(args...)
	if err != nil {
		return fmt.Errorf("landlock config: %w", err)
	}
	rights := func(r uint64) landlock.AccessFSSet { return landlock.AccessFSSet(r) & handled }

	var rules []landlock.Rule
	add := func(dirRights, fileRights landlock.AccessFSSet, paths ...string) error {
		for _, path := range paths {
			fi, err := os.Stat(path)
			switch {
			case errors.Is(err, os.ErrNotExist):
				continue
			case err != nil:
				return fmt.Errorf("landlock rule for %s: %w", path, err)
			case fi.IsDir():
				rules = append(rules, landlock.PathAccess(dirRights, path))
			default:
				rules = append(rules, landlock.PathAccess(fileRights, path))
			}
		}
		return nil
	}
	rw := handled &^ landlock.AccessFSSet(notInRW)
	errs := []error{
		add(rights(rightsRODir), rights(rightsROFile), systemRO...),
		add(rights(rightsRODir), rights(rightsROFile), p.ro...),
		add(0, rights(rightsDevice), devicesRW...),
		add(0, rights(ll.AccessFSReadFile), devicesRO...),
		add(rw, rights(rightsFile), p.rw...),
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// execve replaces the helper with the command.
func execve(path string, argv, env []string) error {
	err := syscall.Exec(path, argv, env)
	return fmt.Errorf("exec %s: %w", path, err)
}
