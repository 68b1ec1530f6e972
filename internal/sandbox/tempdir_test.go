package sandbox

import (
	"bufio"
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
)

// killedRuntimeEnv makes the test binary a runtime that starts one
// confined command with its private temporary directory under the
// variable's value, says "ready <the helper's pid>" once the command has
// written there, and waits to be killed.
const killedRuntimeEnv = "SANDBOX_TEST_KILLED_RUNTIME"

func runtimeToKill(root string) int {
	sb, err := New(Options{TempRoot: root})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("/bin/sh", "-c", `echo work > "$TMPDIR/left" && echo started && exec sleep 30`)
	cmd.Dir = root
	cmd.SysProcAttr = newGroupAttr()
	if _, err := sb.Command(context.Background(), cmd, root, 30*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err == nil {
		_, err = bufio.NewReader(out).ReadString('\n')
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ready %d\n", cmd.Process.Pid)
	select {}
}

// old sets dir's times tempGrace and a second back.
func old(t *testing.T, dir string) {
	t.Helper()
	then := time.Now().Add(-tempGrace - time.Second)
	if err := os.Chtimes(dir, then, then); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// A sweep takes the private directories nobody holds that have been left
// alone for tempGrace, with their contents, and nothing else.
func TestSweepTakesOnlyWhatNobodyHolds(t *testing.T) {
	root := t.TempDir()
	held, err := makeTemp(root)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		dir, err := os.MkdirTemp(root, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	abandoned, fresh, other := mk(tempPrefix), mk(tempPrefix), mk("other-")
	file := filepath.Join(root, tempPrefix+"file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	kept := []string{held.dir, fresh, other, file}
	if os.Geteuid() == 0 { // another user's, where root can make one
		theirs := mk(tempPrefix)
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, theirs)
	}
	for _, p := range append([]string{abandoned}, kept...) {
		if p != fresh {
			old(t, p)
		}
	}
	if n := sweepTemps(root, time.Now()); n != 1 {
		t.Fatalf("removed %d, want 1", n)
	}
	if exists(abandoned) {
		t.Fatal("the abandoned directory is still there")
	}
	for _, p := range kept {
		if !exists(p) {
			t.Fatalf("%s was taken", filepath.Base(p))
		}
	}
	held.remove()
	if exists(held.dir) {
		t.Fatal("remove left the directory")
	}
}

// A runtime killed mid-command cannot remove its command's TMPDIR; the
// next sandbox over the same root does, and not while the runtime lives.
func TestKilledRuntimesTempIsSwept(t *testing.T) {
	root := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), killedRuntimeEnv+"="+root)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the runtime never got ready: %v", err)
	}
	helper, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	if err != nil {
		t.Fatalf("the runtime said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(-helper, syscall.SIGKILL) })

	dirs, _ := filepath.Glob(filepath.Join(root, tempPrefix+"*"))
	if len(dirs) != 1 || !exists(filepath.Join(dirs[0], "left")) {
		t.Fatalf("private directories %v, want one with the command's file", dirs)
	}
	old(t, dirs[0])
	if n := sweepTemps(root, time.Now()); n != 0 || !exists(dirs[0]) {
		t.Fatal("swept the directory of a running runtime")
	}

	_ = child.Process.Kill()
	_ = child.Wait()
	if !exists(dirs[0]) {
		t.Fatal("a killed runtime removed its directory: the sweep is not what this test shows")
	}
	if _, err := New(Options{TempRoot: root}); err != nil {
		t.Fatal(err)
	}
	if exists(dirs[0]) {
		t.Fatal("the next sandbox left the killed runtime's directory")
	}
}
