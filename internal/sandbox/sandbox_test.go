package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// TestMain lets the test binary be the helper, as the agent binary is.
func TestMain(m *testing.M) {
	if IsHelper(os.Args) {
		os.Exit(Main(os.Args[2:]))
	}
	if root := os.Getenv(killedRuntimeEnv); root != "" {
		os.Exit(runtimeToKill(root))
	}
	if v := os.Getenv(hardenedChildEnv); v != "" {
		if v == "1" {
			if err := HardenProcess(); err != nil {
				os.Exit(1)
			}
		}
		os.Stdout.WriteString("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// needLandlock skips where the kernel has no Landlock.
func needLandlock(t *testing.T) {
	t.Helper()
	if LandlockABI() == 0 {
		t.Skip("the kernel has no Landlock: sandbox tests cannot run here")
	}
}

type world struct {
	home, ws, other, ro string
	sb                  *Sandbox
}

// newWorld is a runtime home with a secret .env, two workspaces and a
// read-only tree, and a sandbox over it.
func newWorld(t *testing.T, o Options) *world {
	t.Helper()
	w := &world{home: t.TempDir()}
	w.ws = filepath.Join(w.home, "workspaces", "C1_1")
	w.other = filepath.Join(w.home, "workspaces", "C2_2")
	w.ro = filepath.Join(w.home, "skills")
	for _, d := range []string{w.ws, w.other, w.ro} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{
		filepath.Join(w.home, ".env"):      "CHAT_BOT_TOKEN=xoxb-secret-value\n",
		filepath.Join(w.home, "db.sqlite"): "SQLite format 3",
		filepath.Join(w.other, "notes"):    "other thread",
		filepath.Join(w.ro, "SKILL.md"):    "a skill",
	} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o.ReadOnly = append(o.ReadOnly, w.ro)
	o.TempRoot = t.TempDir()
	sb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	w.sb = sb
	return w
}

// run runs a shell command confined to ws and returns its output and
// error.
func (w *world) run(t *testing.T, command string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.ws}
	cleanup, err := w.sb.Command(context.Background(), cmd, w.ws, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

func TestConfinedFiles(t *testing.T) {
	needLandlock(t)
	w := newWorld(t, Options{Mode: ModeRequired})
	for _, tc := range []struct {
		name, command string
		ok            bool
		want          string
	}{
		{"write the workspace", "echo hi > f && cat f", true, "hi"},
		{"read the system", "head -c 4 /etc/passwd", true, ""},
		{"read a read-only tree", "cat " + w.ro + "/SKILL.md", true, "a skill"},
		{"private TMPDIR", `echo t > "$TMPDIR/x" && cat "$TMPDIR/x" && case "$TMPDIR" in */agent-sbx-*) echo private;; esac`, true, "private"},
		{"dev null", "echo gone > /dev/null && echo ok", true, "ok"},
		{"the home's .env", "cat " + w.home + "/.env", false, "Permission denied"},
		{"the database", "cat " + w.home + "/db.sqlite", false, "Permission denied"},
		{"another workspace", "cat " + w.other + "/notes", false, "Permission denied"},
		{"list the home", "ls " + w.home, false, "Permission denied"},
		{"the runtime's environment", fmt.Sprintf("cat /proc/%d/environ", os.Getpid()), false, "Permission denied"},
		{"pid 1's environment", "cat /proc/1/environ", false, "Permission denied"},
		{"write a read-only tree", "echo x > " + w.ro + "/SKILL.md", false, "Permission denied"},
		{"write outside", "echo x > " + w.home + "/planted", false, "Permission denied"},
		{"hard link to .env", "ln " + w.home + "/.env e", false, ""},
		{"symlink to .env", "ln -s " + w.home + "/.env e && cat e", false, "Permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := w.run(t, tc.command)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v; output:\n%s", err, tc.ok, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("output %q lacks %q", out, tc.want)
			}
			if strings.Contains(out, "xoxb-secret-value") || strings.Contains(out, "SQLite format") || strings.Contains(out, "other thread") {
				t.Fatalf("a secret got out: %q", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(w.home, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a write outside the workspace landed: %v", err)
	}
}

func TestMknodRefused(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("only root could make a device node at all")
	}
	w := newWorld(t, Options{Mode: ModeRequired})
	out, err := w.run(t, "mknod disk b 8 0")
	if err == nil {
		t.Fatalf("mknod of a block device in the workspace succeeded: %s", out)
	}
}

func TestNetDeny(t *testing.T) {
	needLandlock(t)
	if LandlockABI() < 4 {
		t.Skip("the kernel has no Landlock TCP rules (abi < 4)")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the listener\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3`, port)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash for /dev/tcp")
	}
	for _, tc := range []struct {
		net Net
		ok  bool
	}{{NetAllow, true}, {NetDeny, false}} {
		t.Run(string(tc.net), func(t *testing.T) {
			w := newWorld(t, Options{Mode: ModeRequired, Net: tc.net})
			out, err := w.run(t, bash+" -c '"+connect+"'")
			if (err == nil) != tc.ok || strings.Contains(out, "hello") != tc.ok {
				t.Fatalf("net %s: err %v, output %q", tc.net, err, out)
			}
		})
	}
}

func TestFileSizeLimit(t *testing.T) {
	needLandlock(t)
	w := newWorld(t, Options{Mode: ModeRequired, Limits: Limits{FileSize: 1 << 20}})
	out, err := w.run(t, "head -c 4194304 /dev/zero > big")
	if err == nil {
		t.Fatalf("a 4 MiB write under a 1 MiB limit succeeded: %s", out)
	}
	fi, statErr := os.Stat(filepath.Join(w.ws, "big"))
	if statErr != nil || fi.Size() > 1<<20 {
		t.Fatalf("file: %v %v", fi, statErr)
	}
}

func TestForkBombBounded(t *testing.T) {
	needLandlock(t)
	w := newWorld(t, Options{Mode: ModeRequired})
	if w.sb.Status().Pids == "none" {
		t.Skip("root without a pids cgroup: nothing but the timeout bounds a fork bomb here")
	}
	// Bounded by the pids limit, the bomb's forks fail; each shell gives
	// up after a few and the whole thing ends on its own (bash's fork
	// retries are bounded).
	cmd := exec.Command("/bin/sh", "-c", `bomb() { bomb | bomb & }; bomb; sleep 2; echo survived`)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = newGroupAttr()
	cleanup, err := w.sb.Command(context.Background(), cmd, w.ws, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		killGroup(cmd)
		<-done
	}
	killGroup(cmd)
	cleanup()
	// The host is fine: a new process starts at once.
	if out, err := exec.Command("/bin/true").CombinedOutput(); err != nil {
		t.Fatalf("after the bomb: %v %s", err, out)
	}
}

func TestModes(t *testing.T) {
	if _, err := New(Options{Mode: "strict"}); err == nil || !strings.Contains(err.Error(), "AGENT_SANDBOX") {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := New(Options{Net: "maybe"}); err == nil || !strings.Contains(err.Error(), "AGENT_SANDBOX_NET") {
		t.Fatalf("bad net: %v", err)
	}
	off, err := New(Options{Mode: ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	if off.Enforced() || !strings.Contains(off.Status().String(), "unsafe") {
		t.Fatalf("off: %v", off.Status())
	}
	cmd := exec.Command("/bin/true")
	if _, err := off.Command(context.Background(), cmd, t.TempDir(), time.Second); err != nil || cmd.Path != "/bin/true" {
		t.Fatalf("off rewrote the command: %v %v", cmd.Args, err)
	}
	if LandlockABI() == 0 {
		if _, err := New(Options{Mode: ModeRequired}); !errors.Is(err, ErrNoLandlock) || err.Error() != "sandbox required but the kernel has no Landlock" {
			t.Fatalf("required without landlock: %v", err)
		}
		return
	}
	sb, err := New(Options{Mode: ModeAuto, Net: NetDeny})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("sandbox: landlock abi %d, net deny", LandlockABI())
	if got := sb.Status().String(); !strings.HasPrefix(got, want) {
		t.Fatalf("status %q, want %q", got, want)
	}
	if got := (Status{Mode: ModeAuto}).String(); got != "sandbox: unavailable, Bash runs unconfined" {
		t.Fatalf("unavailable: %q", got)
	}
}

func TestHelperRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"--path", "/bin/true"},
		{"--", "true"},
		{"--net", "maybe", "--path", "/bin/true", "--", "true"},
		{"--bogus"},
	} {
		if _, err := parsePolicy(args); err == nil {
			t.Errorf("%q parsed", args)
		}
	}
}

func newGroupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// An older kernel, played by the probe of Options: required refuses to
// start with the pinned text, auto runs unconfined and says so, and a
// kernel without TCP rules says net deny is not enforced.
func TestOlderKernels(t *testing.T) {
	none := func() int { return 0 }
	if _, err := New(Options{Mode: ModeRequired, LandlockABI: none}); !errors.Is(err, ErrNoLandlock) || err.Error() != "sandbox required but the kernel has no Landlock" {
		t.Fatalf("required without landlock: %v", err)
	}
	sb, err := New(Options{Mode: ModeAuto, LandlockABI: none})
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.Status().String(); got != "sandbox: unavailable, Bash runs unconfined" || sb.Enforced() || sb.Status().Landlock != 0 {
		t.Fatalf("auto without landlock: %q", got)
	}
	sb, err = New(Options{Mode: ModeRequired, Net: NetDeny, LandlockABI: func() int { return 3 }})
	if err != nil {
		t.Fatal(err)
	}
	if st := sb.Status(); st.NetEnforced || !strings.Contains(st.String(), "not enforced") {
		t.Fatalf("abi 3 with net deny: %+v %q", st, st.String())
	}
}

// hardenedChildEnv makes the test binary a process that holds a secret
// in its environment, hardens itself when the value is "1", says ready and
// waits for its stdin to close.
const hardenedChildEnv = "SANDBOX_TEST_CHILD"

// After HardenProcess no other process of the same user can read the
// runtime's environment, even unconfined; without it, one can.
func TestHardenProcess(t *testing.T) {
	if err := HardenProcess(); err != nil {
		t.Fatal(err)
	}
	if Dumpable() {
		t.Fatal("still dumpable")
	}
	if os.Geteuid() != 0 {
		t.Skip("playing two processes of one ordinary user needs root to switch to it")
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	// A copy of this binary that the other user may run.
	bin := fake.CopyTestBinary(t, "child")
	for _, hardened := range []bool{false, true} {
		t.Run(fmt.Sprintf("hardened=%v", hardened), func(t *testing.T) {
			child := exec.Command(bin, "-test.run=^$")
			child.Env = []string{hardenedChildEnv + "=" + map[bool]string{false: "0", true: "1"}[hardened], "THE_SECRET=xoxb-held-by-the-runtime"}
			child.SysProcAttr = nobody
			stdin, err := child.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { stdin.Close(); _ = child.Wait() }()
			if _, err := stdout.Read(make([]byte, 5)); err != nil {
				t.Fatal(err)
			}
			cat := exec.Command("/bin/cat", fmt.Sprintf("/proc/%d/environ", child.Process.Pid))
			cat.SysProcAttr = nobody
			out, err := cat.CombinedOutput()
			leaked := strings.Contains(string(out), "xoxb-held-by-the-runtime")
			if leaked == hardened {
				t.Fatalf("hardened=%v: read %v (%v) %q", hardened, leaked, err, out)
			}
		})
	}
}
