//go:build unix

package tools_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/tools"
)

// btBound is the safety net of the tests that wait on processes: far above
// what they take, only there so that a hang fails instead of stalling.
const btBound = 30 * time.Second

func TestBash(t *testing.T) {
	e := newBtEnv(t, nil)
	cases := []struct {
		name, command string
		want          string
	}{
		{"output", "echo hello", "hello\n"},
		{"stderr too", "echo out; echo err >&2", "out\nerr\n"},
		{"in the workspace", "pwd; echo $HOME", e.ws + "\n" + e.ws + "\n"},
		{"exit code", "echo failing; exit 3", "failing\n[exit status 3]"},
		{"no output", "true", "(no output)"},
		{"empty stdin", "cat; echo done", "done\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.call(t, "Bash", map[string]any{"command": c.command})
			if res.IsError || res.Text != c.want {
				t.Errorf("Bash = %+v, want %q", res, c.want)
			}
		})
	}
	if res := e.call(t, "Bash", map[string]any{"command": "echo ok", "timeout": 1e300}); res.IsError || res.Text != "ok\n" {
		t.Errorf("Bash with a huge timeout = %+v", res)
	}
	for name, in := range map[string]map[string]any{
		"no command":       {"command": " "},
		"negative timeout": {"command": "true", "timeout": -5},
	} {
		if res := e.call(t, "Bash", in); !res.IsError {
			t.Errorf("%s: %+v", name, res)
		}
	}
}

// Bash never sees the runtime's environment, only the base it was given,
// less anything credential-like.
func TestBashEnvScrubbed(t *testing.T) {
	t.Setenv("CHAT_BOT_TOKEN", "xoxb-secret")
	t.Setenv("LLM_API_KEY", "sk-ant-secret")
	t.Setenv("AGENT_HOME", "/data")
	e := newBtEnv(t, func(o *tools.BuiltinOptions) {
		o.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "FOO=bar", "LLM_OAUTH_TOKEN=oauth-secret", "HOME=/root", "LEAKY=xoxb-secret"}
		o.Secrets = []string{"xoxb-secret"}
	})
	res := e.call(t, "Bash", map[string]any{"command": "env"})
	if res.IsError {
		t.Fatal(res.Text)
	}
	for _, bad := range []string{"xoxb-secret", "sk-ant-secret", "oauth-secret", "CHAT_", "LLM_", "AGENT_", "LEAKY", "HOME=/root", "[redacted]"} {
		if strings.Contains(res.Text, bad) {
			t.Errorf("env output contains %q:\n%s", bad, res.Text)
		}
	}
	for _, want := range []string{"FOO=bar\n", "HOME=" + e.ws + "\n", "PWD=" + e.ws + "\n", "LANG=C.UTF-8\n"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("env output lacks %q:\n%s", want, res.Text)
		}
	}
}

// btBash runs Bash in a goroutine, failing the test if it does not return
// within btBound.
func btBash(t *testing.T, e *btEnv, ctx context.Context, input map[string]any) tools.Result {
	t.Helper()
	done := make(chan tools.Result, 1)
	go func() { done <- e.callCtx(t, ctx, "Bash", input) }()
	bound, cancel := context.WithTimeout(context.Background(), btBound)
	defer cancel()
	select {
	case res := <-done:
		return res
	case <-bound.Done():
		t.Fatal("Bash did not return")
		return tools.Result{}
	}
}

// btAlive reports whether pid runs (a zombie waiting for its reaper does
// not count).
func btAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || (data[i+2] != 'Z' && data[i+2] != 'X')
}

// btWaitDead waits until the pid written in file has ended.
func btWaitDead(t *testing.T, file string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(fake.ReadFile(t, file)))
	if err != nil {
		t.Fatal(err)
	}
	bound, cancel := context.WithTimeout(context.Background(), btBound)
	defer cancel()
	for btAlive(pid) {
		select {
		case <-bound.Done():
			t.Fatalf("process %d still runs", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A timeout kills the command and what it started.
func TestBashTimeoutKillsTheGroup(t *testing.T) {
	e := newBtEnv(t, nil)
	res := btBash(t, e, e.ctx, map[string]any{"command": "sleep 30 & echo $! > child.pid; wait", "timeout": 200})
	if !res.IsError || !strings.Contains(res.Text, "timed out") {
		t.Fatalf("Bash = %+v", res)
	}
	btWaitDead(t, filepath.Join(e.ws, "child.pid"))
}

// What a command leaves running in the background ends with it, and does
// not hold the call up.
func TestBashEndsLeftovers(t *testing.T) {
	e := newBtEnv(t, nil)
	res := btBash(t, e, e.ctx, map[string]any{"command": "sleep 30 & echo $! > bg.pid; echo started"})
	if res.IsError || res.Text != "started\n" {
		t.Fatalf("Bash = %+v", res)
	}
	btWaitDead(t, filepath.Join(e.ws, "bg.pid"))
}

func TestBashCancelled(t *testing.T) {
	e := newBtEnv(t, nil)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if res := btBash(t, e, ctx, map[string]any{"command": "sleep 30"}); !res.IsError || !strings.Contains(res.Text, "cancelled") {
		t.Errorf("Bash = %+v", res)
	}
}

func TestBashOutputCap(t *testing.T) {
	e := newBtEnv(t, func(o *tools.BuiltinOptions) { o.MaxOutput = 1000 })
	var all strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&all, "%d\n", i)
	}
	fake.WriteFile(t, filepath.Join(e.ws, "seq.txt"), all.String())
	res := e.call(t, "Bash", map[string]any{"command": "cat seq.txt; exit 1"})
	full := all.String()
	want := full[:500] + fmt.Sprintf("\n[output truncated: %d bytes omitted]\n", len(full)-1000) + full[len(full)-500:len(full)-1] + "\n[exit status 1]"
	if res.IsError || res.Text != want {
		t.Errorf("Bash = %.200q…, want %.200q…", res.Text, want)
	}
	// Just over the cap, with nothing dropped while reading.
	fake.WriteFile(t, filepath.Join(e.ws, "small.txt"), strings.Repeat("x", 1010))
	res = e.call(t, "Bash", map[string]any{"command": "cat small.txt"})
	if want := strings.Repeat("x", 500) + "\n[output truncated: 10 bytes omitted]\n" + strings.Repeat("x", 500); res.Text != want {
		t.Errorf("Bash = %q", res.Text)
	}
}

// A secret cut by the truncation is scrubbed whole, not leaked in part.
func TestBashScrubsSecretsAcrossTheCut(t *testing.T) {
	const token = "SECRETTOKEN-0123456789"
	e := newBtEnv(t, func(o *tools.BuiltinOptions) {
		o.MaxOutput = 100
		o.Secrets = []string{token}
	})
	for name, content := range map[string]string{
		"dropped":   strings.Repeat("a", 40) + token + strings.Repeat("b", 5000) + token + strings.Repeat("c", 40),
		"in memory": strings.Repeat("a", 40) + token + strings.Repeat("b", 30) + token + strings.Repeat("c", 40),
		"fits":      "key " + token + " end",
	} {
		t.Run(name, func(t *testing.T) {
			fake.WriteFile(t, filepath.Join(e.ws, "out.txt"), content)
			res := e.call(t, "Bash", map[string]any{"command": "cat out.txt"})
			for _, part := range []string{"SECRET", "TOKEN", "0123", "6789", "-01"} {
				if strings.Contains(res.Text, part) {
					t.Errorf("output holds %q: %q", part, res.Text)
				}
			}
			if !strings.Contains(res.Text, "[redacted]") {
				t.Errorf("output = %q", res.Text)
			}
		})
	}
}

// A command that prints a secret encoded — base64 (wrapped), hex, xxd -p,
// od — shows only the redaction marker, also when the output is cut in
// the middle of the encoded run.
func TestBashScrubsEncodedSecrets(t *testing.T) {
	const token = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
	e := newBtEnv(t, func(o *tools.BuiltinOptions) {
		o.MaxOutput = 200
		o.Secrets = []string{token}
	})
	fake.WriteFile(t, filepath.Join(e.ws, "tok"), "token="+token+"\n")
	for name, command := range map[string]string{
		"base64":          "base64 tok",
		"base64 -w 20":    "base64 -w 20 tok",
		"base64 url-safe": "base64 tok | tr '+/' '-_'",
		"hex":             "od -An -tx1 tok",
		"xxd -p":          "od -An -tx1 -v tok | tr -d ' \\n'; echo",
		"cut in the run":  "head -c 60 /dev/zero | tr '\\0' a; base64 -w 0 tok; head -c 5000 /dev/zero | tr '\\0' b",
	} {
		t.Run(name, func(t *testing.T) {
			res := e.call(t, "Bash", map[string]any{"command": command})
			if res.IsError {
				t.Fatalf("Bash: %+v", res)
			}
			if !strings.Contains(res.Text, "[redacted]") {
				t.Errorf("no redaction in %q", res.Text)
			}
			for _, part := range []string{"eG94Yi0x", "xoxb", "786f78622d"} { // base64 and hex of "xoxb-"
				if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(res.Text, "\n", ""), " ", ""), part) {
					t.Errorf("output holds %q: %q", part, res.Text)
				}
			}
		})
	}
}
