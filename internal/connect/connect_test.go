package connect_test

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
)

const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// Sealing: a fresh nonce per write, the key never in the output, and a
// value opens only with its key and for its owner.
func TestSeal(t *testing.T) {
	s, err := connect.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Seal([]byte("token-value"), "token", "U1", "tracker")
	b, _ := s.Seal([]byte("token-value"), "token", "U1", "tracker")
	if bytes.Equal(a, b) || bytes.Contains(a, []byte("token-value")) {
		t.Fatal("two seals of one value are equal, or show it")
	}
	if got, err := s.Open(a, "token", "U1", "tracker"); err != nil || string(got) != "token-value" {
		t.Fatalf("open = %q %v", got, err)
	}
	if _, err := s.Open(a, "token", "U2", "tracker"); !errors.Is(err, connect.ErrWrongKey) {
		t.Fatalf("opened for another person: %v", err)
	}
	other, _ := connect.ParseKey("ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=")
	if _, err := other.Open(a, "token", "U1", "tracker"); !errors.Is(err, connect.ErrWrongKey) {
		t.Fatalf("opened with another key: %v", err)
	}
	for _, bad := range []string{"not base64!", "c2hvcnQ="} {
		if _, err := connect.ParseKey(bad); err == nil || !strings.HasPrefix(err.Error(), "AGENT_SECRET_KEY ") || strings.Contains(err.Error(), bad) {
			t.Fatalf("ParseKey(%q) = %v", bad, err)
		}
	}
	if err := connect.Required(1, ""); err == nil || err.Error() != `AGENT_SECRET_KEY is required for tool servers with "auth": "oauth"` {
		t.Fatalf("Required without a key: %v", err)
	}
}

// A sign-in link works for 10 minutes: past them, opening it says it
// expired and changes nothing; a link of a server no longer configured
// is not valid.
func TestLinkExpires(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	st, err := store.Open(ctx, store.InMemory, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := connect.New(connect.Options{Servers: []connect.Server{{Name: "tracker", URL: "http://127.0.0.1:1/mcp"}},
		Key: key, PublicURL: "https://agent.example.com", Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := connect.Commands{C: c}.Connect(ctx, fakeAccess(), event("U1"), "tracker")
	if err != nil || !strings.HasPrefix(text, "sign in to tracker: https://agent.example.com/oauth/start?state=") {
		t.Fatalf("/connect = %q %v", text, err)
	}
	u, _ := url.Parse(strings.TrimPrefix(text, "sign in to tracker: "))
	clk.Advance(connect.StateTTL)
	if _, err := c.Start(ctx, u.Query().Get("state")); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("start after 10 minutes: %v", err)
	}
	if _, err := c.Callback(ctx, url.Values{"state": {u.Query().Get("state")}, "code": {"x"}}); err == nil ||
		!strings.Contains(err.Error(), "already used") && !strings.Contains(err.Error(), "expired") {
		t.Fatalf("callback after 10 minutes: %v", err)
	}
	if rs, _ := st.Connections(ctx, ""); len(rs) != 0 {
		t.Fatalf("connections = %+v", rs)
	}
	// Usage and unknown servers.
	for args, want := range map[string]string{"": "usage: /connect <server> (servers: tracker)", "wiki": "`wiki` is not a tool server"} {
		if text, _, _ := (connect.Commands{C: c}).Connect(ctx, fakeAccess(), event("U1"), args); !strings.HasPrefix(text, want) {
			t.Errorf("/connect %q = %q", args, text)
		}
	}
	if text, _, _ := (connect.Commands{C: c}).List(ctx, fakeAccess(), event("U1")); text != "no connections" {
		t.Errorf("/connections = %q", text)
	}
}

// A seeded connection is stored sealed (the token never in the row) and
// gives its owner's token; anyone else is not connected and gets the
// pinned answer naming them; a server not signing in per person is refused.
func TestSeed(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.InMemory, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := connect.New(connect.Options{Servers: []connect.Server{{Name: "tracker", URL: "http://127.0.0.1:1/mcp"}}, Key: key, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Seed(ctx, "U1", "tracker", "ana", "tok-ana"); err != nil {
		t.Fatal(err)
	}
	rs, err := st.Connections(ctx, "")
	if err != nil || len(rs) != 1 || rs[0].Account != "ana" || bytes.Contains(rs[0].Sealed, []byte("tok-ana")) {
		t.Fatalf("stored = %+v, %v", rs, err)
	}
	if tok, refusal, err := c.Token(ctx, "U1", "tracker", ""); tok != "tok-ana" || refusal != "" || err != nil {
		t.Fatalf("Token(U1) = %q %q %v", tok, refusal, err)
	}
	if tok, refusal, err := c.Token(ctx, "U2", "tracker", ""); tok != "" || refusal != "not connected to tracker: ask <@U2> to run /connect tracker" || err != nil {
		t.Fatalf("Token(U2) = %q %q %v", tok, refusal, err)
	}
	if err := c.Seed(ctx, "U1", "wiki", "ana", "x"); err == nil {
		t.Fatal("seeded a server that does not sign in per person")
	}
}
