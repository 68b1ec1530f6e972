//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/persona-runtime/agent/internal/fake"
)

func testMCPLogger() (*slog.Logger, *fake.LogBuffer) {
	lb := &fake.LogBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// writeMCPJSON writes an mcp.json holding servers into a temp dir.
func writeMCPJSON(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testServerEntry is a stdio entry re-executing this test binary as the
// server named by kind.
func mcpServerEntry(t *testing.T, kind string, args []string, env map[string]string) map[string]any {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A race-enabled binary sleeps 1s at exit unless told otherwise.
	e := map[string]string{mcpTestServerEnv: kind, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return map[string]any{"command": exe, "args": args, "env": e}
}

func mcpMapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func mcpMount(t *testing.T, path string, getenv func(string) string, o MCPOptions) *MCPMount {
	t.Helper()
	cfg, err := LoadMCPConfig(path, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if o.BaseEnv == nil {
		o.BaseEnv = []string{"PATH=" + os.Getenv("PATH")}
	}
	m, err := MountMCP(t.Context(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func mcpCall(t *testing.T, m *MCPMount, name, input string) Result {
	t.Helper()
	for _, tool := range m.Tools() {
		if tool.Name == name {
			res, err := tool.Call(t.Context(), json.RawMessage(input))
			if err != nil {
				t.Fatalf("%s: error %v", name, err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return Result{}
}

func mcpToolNames(m *MCPMount) []string {
	var names []string
	for _, t := range m.Tools() {
		names = append(names, t.Name)
	}
	return names
}

func TestMountMCPStdio(t *testing.T) {
	t.Setenv("LLM_API_KEY", "sk-test-must-not-leak")
	log, logs := testMCPLogger()
	path := writeMCPJSON(t, map[string]any{
		"testsrv": mcpServerEntry(t, "stdio",
			[]string{"--greeting=${TEST_GREETING:-hi}", "${TEST_ARG}"},
			map[string]string{"VISIBLE": "${TEST_VISIBLE}", "DEFAULTED": "${TEST_UNSET:-fallback}"}),
		"missing": map[string]any{"command": "/nonexistent/mcp-server-for-test"},
	})
	m := mcpMount(t, path, mcpMapEnv(map[string]string{"TEST_ARG": "arg1", "TEST_VISIBLE": "shown"}), MCPOptions{
		Log:     log,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "CHAT_BOT_TOKEN=xoxb-must-not-leak"},
	})

	want := []string{"mcp__testsrv__args", "mcp__testsrv__crash", "mcp__testsrv__echo", "mcp__testsrv__env",
		"mcp__testsrv__fail", "mcp__testsrv__image", "mcp__testsrv__pid", "mcp__testsrv__read", "mcp__testsrv__spawn"}
	got := mcpToolNames(m)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	NewRegistry().Add(m.Tools()...) // complete, valid schemas, no duplicates
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "server=missing") {
		t.Errorf("no warning for the missing server in %q", l)
	}
	for _, tool := range m.Tools() {
		if tool.Name == "mcp__testsrv__echo" && (!strings.Contains(string(tool.Schema), `"text"`) || tool.Description != "Echo the text.") {
			t.Errorf("echo schema %s, description %q", tool.Schema, tool.Description)
		}
	}

	for _, tc := range []struct {
		name, tool, input, want string
		isError                 bool
	}{
		{"round trip", "echo", `{"text":"hello"}`, "hello", false},
		{"args expanded", "args", `{}`, "--greeting=hi arg1", false},
		{"env var expanded", "env", `{"name":"VISIBLE"}`, "set: shown", false},
		{"env default", "env", `{"name":"DEFAULTED"}`, "set: fallback", false},
		{"base env kept", "env", `{"name":"PATH"}`, "set: " + os.Getenv("PATH"), false},
		{"process env scrubbed", "env", `{"name":"LLM_API_KEY"}`, "unset", false},
		{"credential dropped from base env", "env", `{"name":"CHAT_BOT_TOKEN"}`, "unset", false},
		{"process env not inherited", "env", `{"name":"HOME"}`, "unset", false},
		{"error kept", "fail", `{}`, "boom", true},
		{"non-text summarised", "image", ``, "chart\n[image image/png]", false},
		{"input not an object", "echo", `[1]`, "invalid input", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mcpCall(t, m, "mcp__testsrv__"+tc.tool, tc.input)
			if res.IsError != tc.isError || !strings.Contains(res.Text, tc.want) {
				t.Errorf("got %+v, want %q (error %v)", res, tc.want, tc.isError)
			}
		})
	}

	pid, err := strconv.Atoi(mcpCall(t, m, "mcp__testsrv__pid", `{}`).Text)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server process %d still there after Close: %v", pid, err)
	}
	if res := mcpCall(t, m, "mcp__testsrv__echo", `{"text":"x"}`); !res.IsError || !strings.Contains(res.Text, `"testsrv"`) {
		t.Errorf("call after Close = %+v", res)
	}
	if strings.Contains(logs.String(), "must-not-leak") {
		t.Errorf("a credential reached the log: %s", logs.String())
	}
}

func TestMountMCPServerDies(t *testing.T) {
	log, logs := testMCPLogger()
	path := writeMCPJSON(t, map[string]any{"testsrv": mcpServerEntry(t, "stdio", nil, nil)})
	m := mcpMount(t, path, mcpMapEnv(nil), MCPOptions{Log: log})

	if res := mcpCall(t, m, "mcp__testsrv__crash", `{}`); !res.IsError || !strings.Contains(res.Text, `"testsrv"`) {
		t.Errorf("crash = %+v, want an error result naming the server", res)
	}
	if !fake.Eventually(5*time.Second, func() bool { return strings.Contains(logs.String(), "tool server exited") }) {
		t.Errorf("no warning that the server exited: %s", logs.String())
	}
	if res := mcpCall(t, m, "mcp__testsrv__echo", `{"text":"x"}`); !res.IsError || !strings.Contains(res.Text, `tool server "testsrv" is not running`) {
		t.Errorf("call to a dead server = %+v", res)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close after the server died: %v", err)
	}
}

func TestMountMCPStartFailures(t *testing.T) {
	log, logs := testMCPLogger()
	path := writeMCPJSON(t, map[string]any{
		"crasher": mcpServerEntry(t, "crash", nil, nil),
		"hanger":  mcpServerEntry(t, "hang", nil, nil),
		"testsrv": mcpServerEntry(t, "stdio", nil, nil),
	})
	// The timeout is long enough for a race-built server to start on a
	// loaded machine: the hanger alone must reach it.
	m := mcpMount(t, path, mcpMapEnv(nil), MCPOptions{Log: log, ConnectTimeout: 3 * time.Second})
	for _, n := range mcpToolNames(m) {
		if !strings.HasPrefix(n, "mcp__testsrv__") {
			t.Errorf("tool %s of a failed server mounted", n)
		}
	}
	if len(m.Tools()) == 0 {
		t.Error("the healthy server was not mounted")
	}
	l := logs.String()
	for _, want := range []string{"server=crasher", "cannot start test server", "server=hanger", "no answer within 3s"} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %q: %s", want, l)
		}
	}
}

func TestMountMCPRunnerRewrite(t *testing.T) {
	exe, err := os.Executable()
	if err != nil || strings.ContainsAny(exe, " \t") {
		t.Skip("test binary path unusable as a runner")
	}
	path := writeMCPJSON(t, map[string]any{
		"testsrv": map[string]any{"command": "npx", "args": []string{"-y", "pkg"}, "env": map[string]string{mcpTestServerEnv: "stdio", "GORACE": "atexit_sleep_ms=0"}},
	})
	m := mcpMount(t, path, mcpMapEnv(nil), MCPOptions{Runner: exe + " dlx"})
	if res := mcpCall(t, m, "mcp__testsrv__args", `{}`); res.Text != "dlx -y pkg" {
		t.Errorf("args = %q, want %q", res.Text, "dlx -y pkg")
	}
}

func TestMountMCPHTTP(t *testing.T) {
	srv := newMCPTestServer(false)
	authed := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok-good" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", authed(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	mux.Handle("/sse", authed(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	log, logs := testMCPLogger()
	path := writeMCPJSON(t, map[string]any{
		"web":     map[string]any{"type": "http", "url": "${SRV}/mcp?key=${KEY}", "headers": map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		"stream":  map[string]any{"type": "sse", "url": "${SRV}/sse", "headers": map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		"badauth": map[string]any{"type": "http", "url": "${SRV}/mcp?key=${KEY}", "headers": map[string]string{"Authorization": "Bearer tok-wrong-secret"}},
	})
	m := mcpMount(t, path, mcpMapEnv(map[string]string{"SRV": ts.URL, "TOKEN": "tok-good", "KEY": "key-secret-value"}), MCPOptions{Log: log})

	for _, name := range []string{"mcp__web__echo", "mcp__stream__echo"} {
		if res := mcpCall(t, m, name, `{"text":"over http"}`); res.IsError || res.Text != "over http" {
			t.Errorf("%s = %+v", name, res)
		}
	}
	if slices.ContainsFunc(mcpToolNames(m), func(n string) bool { return strings.HasPrefix(n, "mcp__badauth__") }) {
		t.Error("server with a rejected header mounted")
	}
	l := logs.String()
	if !strings.Contains(l, "server=badauth") {
		t.Errorf("no warning for badauth: %s", l)
	}
	if strings.Contains(l, "tok-wrong-secret") || strings.Contains(l, "key-secret-value") {
		t.Errorf("a secret reached the log: %s", l)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestMountMCPCancelled(t *testing.T) {
	path := writeMCPJSON(t, map[string]any{"testsrv": mcpServerEntry(t, "stdio", nil, nil)})
	cfg, err := LoadMCPConfig(path, mcpMapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if m, err := MountMCP(ctx, cfg, MCPOptions{}); err == nil || m != nil {
		t.Errorf("MountMCP on a cancelled context = %v, %v", m, err)
	}
}

func TestMountMCPEmpty(t *testing.T) {
	m, err := MountMCP(t.Context(), nil, MCPOptions{})
	if err != nil || len(m.Tools()) != 0 || m.Close() != nil {
		t.Errorf("empty mount = %v, %v", m, err)
	}
}
