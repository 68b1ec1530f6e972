package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/service"
)

// replScreen is the REPL's terminal: it keeps what the program writes, without
// escape sequences, and wakes waiters at every write.
type replScreen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newReplScreen() *replScreen { return &replScreen{changed: make(chan struct{})} }

func (s *replScreen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

var replANSI = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?`)

func (s *replScreen) text() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return replANSI.ReplaceAllString(s.buf.String(), ""), s.changed
}

// waitFor returns once want has been drawn; the REPL draws at most 60
// frames a second, so a line is drawn soon after it is added.
func (s *replScreen) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		text, changed := s.text()
		if strings.Contains(text, want) {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the screen never showed %q; it shows:\n%s", want, lastChars(text, 3000))
		}
	}
}

func lastChars(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// startREPL runs `agent sim --fixture` on a pipe and a replScreen; type sends a
// line as keystrokes and Enter.
func startREPL(t *testing.T) (scr *replScreen, typ func(string), quit func() error) {
	t.Helper()
	dir, err := filepath.Abs("../../sim/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "AGENT_SIM_SCENARIOS": dir}
	in, keys := io.Pipe()
	t.Cleanup(func() { keys.Close() })
	scr = newReplScreen()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"sim", "--fixture"}, func(k string) string { return env[k] }, in, scr, &stderr)
	}()
	typ = func(line string) {
		t.Helper()
		if _, err := keys.Write([]byte(line + "\r")); err != nil {
			t.Fatalf("type %q: %v", line, err)
		}
	}
	quit = func() error {
		t.Helper()
		typ("/quit")
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the REPL did not quit")
			return nil
		}
	}
	return scr, typ, quit
}

func TestSimREPL(t *testing.T) {
	scr, typ, quit := startREPL(t)
	scr.waitFor(t, "agent · v"+service.Version)
	scr.waitFor(t, "stub (reply)")
	scr.waitFor(t, "manager U0MGR │ D0SIM dm")

	typ("/help")
	for _, want := range []string{"/scenario <name>", "/click <n> <action>", "/behavior <name>", "/layer <layer>",
		"roles: manager U0MGR", "behaviours: reply, echo, request_approval"} {
		scr.waitFor(t, want)
	}

	typ("/click 1 approve")
	scr.waitFor(t, "no card 1: 0 card(s) posted")

	typ("hello")
	scr.waitFor(t, "[D0SIM #1] manager: hello")
	scr.waitFor(t, "[D0SIM #1] bot: ack: done")

	typ("/behavior request_approval")
	scr.waitFor(t, "stub (request_approval)")
	typ("please deploy")
	scr.waitFor(t, "[card 1] approval · deploy: deploy prod (approve, deny)")

	typ("/click 1 approve")
	scr.waitFor(t, "manager clicked approve on card 1")
	scr.waitFor(t, "[card 1] approval · deploy: deploy prod: approved by <@U0MGR>")
	scr.waitFor(t, "bot: approved by <@U0MGR>")

	typ("/click 9 approve")
	scr.waitFor(t, "no card 9: 1 card(s) posted")

	typ("/layer restricted")
	typ("/as member")
	scr.waitFor(t, "member U0ALICE │ C0RANDOM restricted")
	typ("hi there")
	scr.waitFor(t, "member: <@U0BOT> hi there")
	scr.waitFor(t, "dropped: whitelist")

	if err := quit(); err != nil {
		t.Fatalf("quit: %v", err)
	}
}

func TestSimREPLErrorsAndScenario(t *testing.T) {
	scr, typ, quit := startREPL(t)
	scr.waitFor(t, "agent · v")
	for _, c := range []struct{ line, want string }{
		{"/frobnicate", "unknown command /frobnicate: /help lists the commands"},
		{"/behavior nope", `unknown agent behaviour "nope" (want one of reply, echo,`},
		{"/as nobody", `unknown actor "nobody"`},
		{"/layer moon", "usage: /layer trusted|allowed|restricted|dm"},
		{"/click x approve", "usage: /click <n> <action>: n is a card's number"},
		{"/scenario no-such", "no-such.yaml: no such file"},
		{"/restart soon", "usage: /restart [duration], the time down"},
	} {
		typ(c.line)
		scr.waitFor(t, c.want)
	}
	typ("/behavior echo")
	typ("/channel C0TEAM")
	typ("in a channel")
	typ("and again") // typed at once: it still continues the thread
	scr.waitFor(t, "[C0TEAM #1] manager: <@U0BOT> in a channel")
	scr.waitFor(t, "[C0TEAM #1] manager: and again")
	scr.waitFor(t, "[C0TEAM #1] bot: echo: in a channel")
	scr.waitFor(t, "[C0TEAM #1] bot: echo: and again")

	// A restart keeps the database: the thread the bot was called into
	// still engages it.
	typ("/restart 1h")
	scr.waitFor(t, "restarting: down 1h0m0s, up at 2026-01-05 10:00 UTC")
	typ("after the restart")
	scr.waitFor(t, "[C0TEAM #1] bot: echo: after the restart")

	typ("/scenario approval-approved")
	scr.waitFor(t, "✓ step 2 expect_card deploy prod")
	scr.waitFor(t, `scenario "an approver approves a deploy": 3/3 expectations passed`)
	typ("/scenario restricted-member-dropped")
	scr.waitFor(t, "dropped: whitelist")
	scr.waitFor(t, "expectations passed")
	if err := quit(); err != nil {
		t.Fatalf("quit: %v", err)
	}
}
