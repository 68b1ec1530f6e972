package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sandbox"
)

// The abuse suite, the sandbox's helper below Landlock ABI 6: there the
// kernel does not scope signals, and a command can kill the helper that
// would end what it started. Nothing it started outlives the call all the
// same, in its process group or not (setsid), as root and as an
// unprivileged user (where no pids cgroup helps): as root, the second case
// runs this test binary again as nobody.
func TestAbuseHelperKilledBelowABI6(t *testing.T) {
	t.Run("as the tests' user", func(t *testing.T) {
		if os.Getenv(abuseAsEnv) != "" {
			t.Skip("the re-executed binary runs the unprivileged case only")
		}
		helperKillScenario(t, 0)
	})
	t.Run("as an unprivileged user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			helperKillScenario(t, 1)
			return
		}
		if sandbox.LandlockABI() == 0 {
			t.Skip("the kernel has no Landlock: the abuse suite needs it (AGENT_SANDBOX=required)")
		}
		bin := fake.CopyTestBinary(t, "agent.test")
		child := exec.Command(bin, "-test.run=^TestAbuseHelperKilledBelowABI6$/^as_an_unprivileged_user$", "-test.count=1", "-test.v")
		child.Dir = filepath.Dir(bin)
		child.Env = []string{abuseAsEnv + "=1", "PATH=" + os.Getenv("PATH"), "TMPDIR=/tmp", "GORACE=atexit_sleep_ms=0"}
		child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := child.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestAbuseHelperKilledBelowABI6/as_an_unprivileged_user")) {
			t.Fatalf("as nobody: %v\n%s", err, out)
		}
		for _, k := range []int{1, 2, 3} {
			if pids := abuseSleepers(t, fmt.Sprintf("3218.1%d", k)); len(pids) > 0 {
				t.Fatalf("a sleep outlived the unprivileged run: %v", pids)
			}
		}
	})
}

// helperKillScenario runs, through the real service on a kernel played as
// Landlock ABI 5, a Bash command that starts a sleep in its group, one
// with setsid and one with setsid from a subshell that exits (an orphan),
// then kills its helper (its parent): after the call, no sleep is left.
func helperKillScenario(t *testing.T, user int) {
	abi := sandbox.LandlockABI()
	if abi == 0 {
		t.Skip("the kernel has no Landlock: the abuse suite needs it (AGENT_SANDBOX=required)")
	}
	h := newHarness(t, rulesSoul)
	h.landlock = func() int { return min(abi, 5) }
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	h.env["AGENT_SANDBOX"] = "required"
	h.env["PATH"] = os.Getenv("PATH")
	command := fmt.Sprintf("sleep 3218.%[1]d1 & setsid sleep 3218.%[1]d2 & (setsid sleep 3218.%[1]d3 &); sleep 0.5; echo started; kill -9 $PPID", user)
	n := 0
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		n++
		if res, isErr, ok := lastResult(req); ok {
			msgs := req.ParsedMessages()
			prev := msgs[len(msgs)-2].Content
			if prev[len(prev)-1].Name != "Bash" {
				return fake.TextReply("")
			}
			return say(fmt.Sprintf("toolu_r%d", n))("RESULT "+res, isErr)
		}
		return fake.ToolUse(fmt.Sprintf("toolu_b%d", n), "Bash", map[string]any{"command": command})
	}
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "500.1", Text: "<@U0BOT> kill the helper"})
	if got := h.expectReply("C0TEAM", "500.1", "RESULT ").Text; !strings.Contains(got, "started") {
		t.Fatalf("reply %q, want the command's output", got)
	}
	for _, k := range []int{1, 2, 3} {
		arg := fmt.Sprintf("3218.%d%d", user, k)
		if pids := abuseSleepers(t, arg); len(pids) > 0 {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("sleep %s outlived the Bash call that killed its helper (uid %d, landlock abi %d): pids %v", arg, os.Geteuid(), min(abi, 5), pids)
		}
	}
}
