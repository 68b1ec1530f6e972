package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/service"
)

// testSoul is a persona with a DM open to anyone (no channel lists).
const testSoul = `# Persona

## Identity
- Name: Testbot
- Role: release manager
- Voice: short and plain

## Reporting
- Manager: U0MGR

## Mandate
- Owns the release calendar.
`

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// harness runs `agent start` against the fakes.
type harness struct {
	t      testing.TB
	slack  *fake.Slack
	model  *fake.Anthropic
	home   string
	port   int
	env    map[string]string
	logs   *fake.LogBuffer
	turns  int // turns answered so far, across restarts
	cancel context.CancelFunc
	done   chan error

	// deps, when set, adjusts what `agent start` gives the service.
	deps func(*service.Deps)
	// landlock, when set, plays a kernel with that Landlock ABI for the
	// commands the harness runs (cli.landlock).
	landlock func() int

	// metricsPort serves /metrics when it is not the health port
	// (AGENT_METRICS_PORT); 0: the health port.
	metricsPort int
}

func newHarness(t testing.TB, soul string) *harness {
	t.Helper()
	h := &harness{t: t, slack: fake.NewSlack(t), model: fake.NewAnthropic(t), home: t.TempDir(), logs: &fake.LogBuffer{}}
	if soul != "" {
		if err := os.WriteFile(filepath.Join(h.home, "SOUL.md"), []byte(soul), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.port = freePort(t)
	h.env = map[string]string{
		"HOME":               h.home, // so that no real ~/.agent/.env is read
		"CHAT_BOT_TOKEN":     fake.DefaultBotToken,
		"CHAT_APP_TOKEN":     fake.DefaultAppToken,
		"CHAT_API_URL":       h.slack.URL(),
		"LLM_API_KEY":        "sk-ant-api03-test-key-000000000000",
		"LLM_BASE_URL":       h.model.URL(),
		"AGENT_MODEL":        "claude-test",
		"AGENT_HOME":         h.home,
		"AGENT_HEALTH_PORT":  strconv.Itoa(h.port),
		"AGENT_LOG_LEVEL":    "debug",
		"AGENT_IDLE_MINUTES": "15",
	}
	h.model.Key = h.env["LLM_API_KEY"]
	return h
}

func (h *harness) getenv(k string) string { return h.env[k] }

func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	h.turns = 0 // a new process has new metrics
	c := &cli{getenv: h.getenv, args: []string{"start"}, streams: streams{stdin: strings.NewReader(""), stdout: io.Discard, stderr: h.logs},
		serviceDeps: h.deps, landlock: h.landlock}
	go func() { h.done <- c.run(ctx) }()
	h.t.Cleanup(func() { h.stop() })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	for {
		resp, err := http.Get(h.url("/healthz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-h.done:
			h.t.Fatalf("service exited early: %v\nlogs:\n%s", err, h.logs)
		case <-ctx2.Done():
			h.t.Fatalf("service not healthy in time; logs:\n%s", h.logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if h.env["CHAT_APP_TOKEN"] == "" {
		// HTTP ingress: the platform posts to the health port.
		h.waitLog("http ingress started")
		return
	}
	if err := h.slack.WaitConnected(ctx2); err != nil {
		h.t.Fatalf("socket not connected: %v\nlogs:\n%s", err, h.logs)
	}
}

// runCLI runs a command of the CLI, as runCLI does, on h's environment
// and h's test adjustments (deps, landlock).
func (h *harness) runCLI(args ...string) (string, string, int) {
	return runCLIWith(&cli{getenv: h.getenv, args: args, serviceDeps: h.deps, landlock: h.landlock})
}

func (h *harness) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(30 * time.Second):
		h.t.Fatal("service did not stop")
		return nil
	}
}

// waitLog waits until the logs contain text.
func (h *harness) waitLog(text string) {
	h.t.Helper()
	if !fake.Eventually(10*time.Second, func() bool { return strings.Contains(h.logs.String(), text) }) {
		h.t.Fatalf("logs lack %q:\n%s", text, h.logs)
	}
}

func (h *harness) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", h.port, path) }

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) get(path string) (int, string) {
	h.t.Helper()
	return h.getAt(0, path)
}

// getAt gets path on port (0: the health port).
func (h *harness) getAt(port int, path string) (int, string) {
	h.t.Helper()
	if port == 0 {
		port = h.port
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// replyWith scripts the model: answer through the reply tool, then end.
func replyWith(text string) []fake.AnthropicResponse {
	return []fake.AnthropicResponse{
		fake.ToolUse("toolu_"+strconv.Itoa(len(text)), "mcp__agent_chat__reply", map[string]string{"text": text}),
		fake.TextReply(""),
	}
}

func TestEndToEndDM(t *testing.T) {
	h := newHarness(t, testSoul)
	h.start()
	ctx := h.ctx()

	// The startup lines of the spec.
	for _, line := range []string{"slack socket mode started", "http listening", "socket ready"} {
		h.waitLog(line)
	}

	// A DM in: acked, the model called with the persona, the reply posted
	// in the DM's thread.
	h.model.Enqueue(replyWith("Hello from **Testbot**")...)
	env := h.slack.SendEvent(fake.Message{User: "U0ALICE", Channel: "D0DM", TS: "1700000000.000100", Text: "hi there"}.Payload())
	if err := h.slack.WaitAck(ctx, env); err != nil {
		t.Fatal(err)
	}
	post, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return p.Channel == "D0DM" })
	if err != nil {
		t.Fatalf("no reply: %v\nlogs:\n%s", err, h.logs)
	}
	if post.ThreadTS != "1700000000.000100" || post.Text != "Hello from *Testbot*" {
		t.Fatalf("reply = %+v", post)
	}
	if err := h.model.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	reqs := h.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2 (tool call, then end)", len(reqs))
	}
	first := reqs[0]
	if sys := first.SystemText(); !strings.Contains(sys, "Testbot") || !strings.Contains(sys, "release calendar") {
		t.Fatalf("persona missing from the system prompt:\n%s", sys)
	}
	if got := first.Header.Get("x-api-key"); got != h.env["LLM_API_KEY"] {
		t.Fatalf("x-api-key = %q", got)
	}
	if first.Model != "claude-test" {
		t.Fatalf("model = %q", first.Model)
	}
	if !strings.Contains(string(first.Messages), "hi there") {
		t.Fatalf("user message missing: %s", first.Messages)
	}

	// A second message in the thread carries the first in the history.
	h.model.Enqueue(replyWith("Still here")...)
	h.slack.SendEvent(fake.Message{User: "U0ALICE", Channel: "D0DM", TS: "1700000000.000200", ThreadTS: "1700000000.000100", Text: "and again"}.Payload())
	if _, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return p.Text == "Still here" }); err != nil {
		t.Fatalf("no second reply: %v", err)
	}
	if err := h.model.WaitRequests(ctx, 4); err != nil {
		t.Fatal(err)
	}
	third := h.model.Requests()[2]
	msgs := string(third.Messages)
	for _, want := range []string{"hi there", "Hello from **Testbot**", "and again"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("history lacks %q: %s", want, msgs)
		}
	}

	// Health, readiness and metrics over real HTTP.
	code, body := h.get("/healthz")
	var health map[string]any
	if err := json.Unmarshal([]byte(body), &health); err != nil || code != 200 {
		t.Fatalf("/healthz %d %s", code, body)
	}
	if health["status"] != "ok" || health["sessions_live"] != float64(1) || health["uptime_ms"] == nil || len(health) != 3 {
		t.Fatalf("/healthz body %s", body)
	}
	if code, body := h.get("/readyz"); code != 200 || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("/readyz %d %s", code, body)
	}
	code, body = h.get("/metrics")
	for _, want := range []string{"agent_sessions_live 1", `agent_chat_drops_total{reason="whitelist"} 0`,
		`agent_chat_drops_total{reason="duplicate"} 0`, `agent_model_tokens_total{kind="cache_read",model="claude-test"}`,
		`agent_pipeline_stage_total{outcome="pass",stage="drop"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, _ := h.get("/nope"); code != 404 {
		t.Errorf("/nope = %d", code)
	}

	// The token never reached the logs.
	if err := h.stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	for _, secret := range []string{fake.DefaultBotToken, fake.DefaultAppToken, h.env["LLM_API_KEY"]} {
		if strings.Contains(h.logs.String(), secret) {
			t.Errorf("a credential reached the logs")
		}
	}
}
