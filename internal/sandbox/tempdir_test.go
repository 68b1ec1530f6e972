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

	"github.com/persona-runtime/agent/pkg/fsutil"
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
	time.Sleep(time.Minute) // killed long before (a bare select{} could end as a deadlock)
	return 0
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
	then := time.Now().Add(-fsutil.HeldGrace - time.Second)
	if err := os.Chtimes(dirs[0], then, then); err != nil {
		t.Fatal(err)
	}
	if n := fsutil.SweepUnheld(root, tempPrefix, time.Now()); n != 0 || !exists(dirs[0]) {
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

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
