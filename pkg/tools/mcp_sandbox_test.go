//go:build linux

package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/sandbox"
)

// A stdio tool server runs confined: it works, its HOME is its own state
// folder, and it can read neither the runtime's home (.env, database) nor
// write outside its state.
func TestMountMCPConfined(t *testing.T) {
	if sandbox.LandlockABI() == 0 {
		t.Skip("the kernel has no Landlock: confined tool servers cannot be tested here")
	}
	home := t.TempDir()
	for name, content := range map[string]string{".env": "LLM_API_KEY=sk-ant-api03-secret\n", "db.sqlite": "SQLite format 3"} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeRequired, TempRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, "tool-servers")
	path := writeMCPJSON(t, map[string]any{"testsrv": mcpServerEntry(t, "stdio", nil, nil)})
	m := mcpMount(t, path, mcpMapEnv(nil), MCPOptions{Sandbox: sb, StateDir: state})
	if res := mcpCall(t, m, "mcp__testsrv__echo", `{"text":"still works"}`); res.IsError || res.Text != "still works" {
		t.Fatalf("echo: %+v", res)
	}
	if res := mcpCall(t, m, "mcp__testsrv__env", `{"name":"HOME"}`); res.Text != "set: "+filepath.Join(state, "testsrv") {
		t.Fatalf("HOME: %+v", res)
	}
	for _, p := range []string{filepath.Join(home, ".env"), filepath.Join(home, "db.sqlite"), "/proc/1/environ"} {
		res := mcpCall(t, m, "mcp__testsrv__read", `{"path":"`+p+`"}`)
		if !res.IsError || strings.Contains(res.Text, "secret") || strings.Contains(res.Text, "SQLite") {
			t.Fatalf("read %s: %+v", p, res)
		}
	}
	if res := mcpCall(t, m, "mcp__testsrv__read", `{"path":"`+filepath.Join(home, "planted")+`","text":"x"}`); !res.IsError {
		t.Fatalf("write outside: %+v", res)
	}
	own := filepath.Join(state, "testsrv", "cache")
	if res := mcpCall(t, m, "mcp__testsrv__read", `{"path":"`+own+`","text":"x"}`); res.IsError {
		t.Fatalf("write in its state: %+v", res)
	}
}

// A server started as `program /data/server.js`, where /data also holds
// the runtime's .env and database, is granted the script, not /data: it
// runs, and cannot read the secrets beside its script.
func TestMountMCPConfinedGrantsTheFileNotItsSecretFolder(t *testing.T) {
	if sandbox.LandlockABI() == 0 {
		t.Skip("the kernel has no Landlock: confined tool servers cannot be tested here")
	}
	data := t.TempDir()
	files := map[string]string{".env": "LLM_API_KEY=sk-ant-api03-secret\n", "db.sqlite": "SQLite format 3", "server.js": "// the server's script"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(data, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeRequired, TempRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(data, "server.js")
	path := writeMCPJSON(t, map[string]any{"testsrv": mcpServerEntry(t, "stdio", []string{script}, nil)})
	m := mcpMount(t, path, mcpMapEnv(nil), MCPOptions{Sandbox: sb, StateDir: t.TempDir(),
		Deny: []string{filepath.Join(data, ".env"), filepath.Join(data, "db.sqlite")}})
	if res := mcpCall(t, m, "mcp__testsrv__read", `{"path":"`+script+`"}`); res.IsError || !strings.Contains(res.Text, "the server's script") {
		t.Fatalf("read its own script: %+v", res)
	}
	for _, name := range []string{".env", "db.sqlite"} {
		res := mcpCall(t, m, "mcp__testsrv__read", `{"path":"`+filepath.Join(data, name)+`"}`)
		if !res.IsError || strings.Contains(res.Text, "secret") || strings.Contains(res.Text, "SQLite") {
			t.Fatalf("read %s beside its script: %+v", name, res)
		}
	}
}

// What a confined server started dies with the server, even in a session
// of its own: the sandbox's helper, its parent, kills it when the server
// ends (here it crashes), before anything else cleans up.
func TestMountMCPConfinedServerTakesItsDescendants(t *testing.T) {
	if sandbox.LandlockABI() == 0 {
		t.Skip("the kernel has no Landlock: confined tool servers cannot be tested here")
	}
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeRequired, TempRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	path := writeMCPJSON(t, map[string]any{"testsrv": mcpServerEntry(t, "stdio", nil, nil)})
	m := mcpMount(t, path, mcpMapEnv(nil), MCPOptions{Sandbox: sb, StateDir: t.TempDir()})
	res := mcpCall(t, m, "mcp__testsrv__spawn", `{"text":"sleep 3217.77"}`)
	pid, err := strconv.Atoi(res.Text)
	if res.IsError || err != nil {
		t.Fatalf("spawn: %+v", res)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if res, err := m.Tools()[slices.IndexFunc(m.Tools(), func(t Tool) bool { return t.Name == "mcp__testsrv__crash" })].Call(t.Context(), nil); err == nil && !res.IsError {
		t.Fatalf("crash: %+v", res)
	}
	for bound := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmdline), "3217.77") {
			break // gone (or a zombie of nobody's)
		}
		if time.Now().After(bound) {
			t.Fatalf("the server's sleep %d outlived it", pid)
		}
	}
}
