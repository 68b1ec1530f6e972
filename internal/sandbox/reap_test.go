//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// nobody is the unprivileged user the tests switch to when they run as
// root, as the image's non-root user runs the service: no cgroup, only
// the helper to end what a command started.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// reapWorld is a sandbox and a workspace that the user of the commands
// (root or nobody) may use.
type reapWorld struct {
	sb   *Sandbox
	ws   string
	cred *syscall.Credential
}

// newReapWorld makes a world whose commands run as the test's user, or,
// when unprivileged is set and the test runs as root, as nobody, with the
// helper copied where nobody may run it and no pids cgroup (nobody has
// none). As another user already, it runs as that user.
func newReapWorld(t *testing.T, unprivileged bool) *reapWorld {
	t.Helper()
	needLandlock(t)
	o := Options{Mode: ModeRequired}
	w := &reapWorld{}
	if !unprivileged || os.Geteuid() != 0 {
		o.TempRoot = t.TempDir()
		w.ws = t.TempDir()
		sb, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		w.sb = sb
		return w
	}
	o.Exe = fake.CopyTestBinary(t, "helper")
	dir := filepath.Dir(o.Exe)
	o.TempRoot, w.ws = filepath.Join(dir, "tmp"), filepath.Join(dir, "ws")
	for _, d := range []string{o.TempRoot, w.ws} {
		if err := os.Mkdir(d, 0o700); err != nil || os.Chown(d, int(nobody.Uid), int(nobody.Gid)) != nil {
			t.Fatal(err)
		}
	}
	sb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	sb.pids = nil // as the non-root service has it
	w.sb, w.cred = sb, nobody
	return w
}

// start starts script confined, as Bash does (a process group of its
// own), its output on a pipe.
func (w *reapWorld) start(t *testing.T, script string) (*exec.Cmd, *bufio.Reader, func()) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: w.cred}
	cleanup, err := w.sb.Command(context.Background(), cmd, w.ws, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = wr, wr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	t.Cleanup(func() { r.Close(); killGroup(cmd) })
	return cmd, bufio.NewReader(r), cleanup
}

// sleepers returns the pids of the processes running `sleep <arg>`.
func sleepers(t *testing.T, arg string) []int {
	t.Helper()
	want := []byte("sleep\x00" + arg + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.HasSuffix(cmdline, want) {
			out = append(out, pid)
		}
	}
	return out
}

// survivors returns the pids of the `sleep <arg>` processes still running
// once those already killed have had time to end. A process killed by a
// signal is still listed, with its command line, until the kernel has
// torn it down, which on a loaded machine takes a while after kill
// returns: what is still there after a few seconds was not killed.
func survivors(t *testing.T, arg string) []int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := sleepers(t, arg)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noSleepers fails the test if a `sleep <arg>` runs, and kills it.
func noSleepers(t *testing.T, arg string) {
	t.Helper()
	if pids := survivors(t, arg); len(pids) > 0 {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("sleep %s outlived its command: pids %v", arg, pids)
	}
}

// users are the two ways the service runs: as whoever runs the tests
// (root in CI, where a pids cgroup exists too) and as an unprivileged
// user with nothing but the helper.
var users = []struct {
	name         string
	unprivileged bool
}{{"as the tests' user", false}, {"as an unprivileged user", true}}

// A process that left the command's process group and session (setsid)
// and whose parent is gone is killed when the command ends, before the
// helper exits: no cgroup needed.
func TestNothingOutlivesTheCommand(t *testing.T) {
	for i, u := range users {
		t.Run(u.name, func(t *testing.T) {
			w := newReapWorld(t, u.unprivileged)
			arg := fmt.Sprintf("3217.%d1", i)
			cmd, out, cleanup := w.start(t, "setsid sleep "+arg+" & echo started")
			defer cleanup()
			line, _ := out.ReadString('\n')
			if err := cmd.Wait(); err != nil || line != "started\n" {
				t.Fatalf("command: %v %q", err, line)
			}
			noSleepers(t, arg)
		})
	}
}

// Stopped (a Bash call's timeout, a turn's end: SIGTERM to the helper),
// the command and everything it started die at once, setsid or not, and
// the helper reports the kill.
func TestNothingOutlivesAStoppedCommand(t *testing.T) {
	for i, u := range users {
		t.Run(u.name, func(t *testing.T) {
			w := newReapWorld(t, u.unprivileged)
			escaped, waiting := fmt.Sprintf("3217.%d2", i), fmt.Sprintf("3217.%d3", i)
			cmd, out, cleanup := w.start(t, "setsid sleep "+escaped+" & echo started; sleep "+waiting)
			defer cleanup()
			if line, err := out.ReadString('\n'); err != nil || line != "started\n" {
				t.Fatalf("command: %v %q", err, line)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if err == nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("stopped command: %v (%v)", err, cmd.ProcessState)
			}
			noSleepers(t, escaped)
			noSleepers(t, waiting)
		})
	}
}

// The helper ends as the command did: its exit status, or its signal,
// one the Go runtime ignores (SIGXFSZ, a file size limit) included.
func TestHelperPassesOnTheEnd(t *testing.T) {
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			w := newReapWorld(t, u.unprivileged)
			for _, tc := range []struct {
				script string
				code   int
				sig    syscall.Signal
			}{
				{"exit 0", 0, 0},
				{"exit 3", 3, 0},
				{"kill -TERM $$", -1, syscall.SIGTERM},
				{"kill -XFSZ $$", -1, syscall.SIGXFSZ},
			} {
				cmd, _, cleanup := w.start(t, tc.script)
				_ = cmd.Wait()
				cleanup()
				ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if cmd.ProcessState.ExitCode() != tc.code || (tc.sig != 0 && (!ws.Signaled() || ws.Signal() != tc.sig)) {
					t.Errorf("%s: ended %v, want code %d signal %v", tc.script, cmd.ProcessState, tc.code, tc.sig)
				}
			}
		})
	}
}

// The command cannot kill the helper to set what it started free: the
// helper is outside its Landlock domain, and the kernel scopes signals
// to the domain (Landlock ABI 6).
func TestCommandCannotKillItsHelper(t *testing.T) {
	if LandlockABI() < 6 {
		t.Skip("the kernel does not scope signals to a Landlock domain (abi < 6): a command can kill its helper here")
	}
	for i, u := range users {
		t.Run(u.name, func(t *testing.T) {
			w := newReapWorld(t, u.unprivileged)
			arg := fmt.Sprintf("3217.%d4", i)
			cmd, out, cleanup := w.start(t, "setsid sleep "+arg+" & kill -KILL $PPID; echo kill: $?")
			defer cleanup()
			var text strings.Builder // the shell's complaint, then its echo
			for {
				line, err := out.ReadString('\n')
				text.WriteString(line)
				if err != nil || strings.HasPrefix(line, "kill: ") {
					break
				}
			}
			if err := cmd.Wait(); err != nil || !strings.HasSuffix(text.String(), "kill: 1\n") {
				t.Fatalf("kill of the helper: %q, %v", text.String(), err)
			}
			noSleepers(t, arg)
		})
	}
}

// A tool server stopped with SIGTERM gets it passed on and ServerGrace to
// end well (its own exit status is kept); what it started dies with it.
func TestServerStoppedGently(t *testing.T) {
	for i, u := range users {
		t.Run(u.name, func(t *testing.T) {
			w := newReapWorld(t, u.unprivileged)
			arg, waiting := fmt.Sprintf("3217.%d5", i), fmt.Sprintf("3217.%d6", i)
			cmd := exec.Command("/bin/sh", "-c", "trap 'echo stopping; exit 0' TERM; setsid sleep "+arg+" & echo started; sleep "+waiting+" & wait")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: w.cred}
			state := filepath.Join(w.ws, "state")
			cleanup, err := w.sb.Server(cmd, state, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			if w.cred != nil {
				if err := os.Chown(state, int(w.cred.Uid), int(w.cred.Gid)); err != nil {
					t.Fatal(err)
				}
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { killGroup(cmd) })
			out := bufio.NewReader(stdout)
			if line, err := out.ReadString('\n'); err != nil || line != "started\n" {
				t.Fatalf("server: %v %q", err, line)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			line, _ := out.ReadString('\n')
			if err := cmd.Wait(); err != nil || line != "stopping\n" {
				t.Fatalf("stopped server: %v %q", err, line)
			}
			noSleepers(t, arg)
			noSleepers(t, waiting)
		})
	}
}
