package store

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"
)

func TestCreateSessionAndLookup(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()

	if _, err := s.SessionByThread(ctx, "C1:1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SessionByThread before create = %v, want ErrNotFound", err)
	}
	id := NewID()
	if err := s.CreateSession(ctx, Session{ID: id, ThreadKey: "C1:1"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.SessionByThread(ctx, "C1:1")
	if err != nil {
		t.Fatal(err)
	}
	want := Session{ID: id, ThreadKey: "C1:1", State: SessionLive, CreatedAt: c.Now(), LastActivity: c.Now()}
	if got != want {
		t.Errorf("SessionByThread =\n%+v, want\n%+v", got, want)
	}
}

func TestCreateSessionConflicts(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "C1:1"}); err != nil {
		t.Fatal(err)
	}
	for name, sess := range map[string]Session{
		"same thread": {ID: "s2", ThreadKey: "C1:1"},
		"same id":     {ID: "s1", ThreadKey: "C1:2"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.CreateSession(ctx, sess); !errors.Is(err, ErrConflict) {
				t.Errorf("CreateSession = %v, want ErrConflict", err)
			}
		})
	}
	got, err := s.SessionByThread(ctx, "C1:1")
	if err != nil || got.ID != "s1" {
		t.Errorf("SessionByThread = %+v, %v; want the first session", got, err)
	}
}

func TestCreateSessionInvalid(t *testing.T) {
	s, _ := newTestStore(t)
	for name, sess := range map[string]Session{
		"no id":         {ThreadKey: "C1:1"},
		"no thread":     {ID: "s1"},
		"unknown state": {ID: "s1", ThreadKey: "C1:1", State: "sleeping"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.CreateSession(t.Context(), sess); err == nil || errors.Is(err, ErrConflict) {
				t.Errorf("CreateSession = %v, want a validation error", err)
			}
		})
	}
}

func TestSessionNotFound(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	for name, err := range map[string]error{
		"TouchSession": s.TouchSession(ctx, "nope", SessionLive, time.Now()),
		"AppendMessages": s.AppendMessages(ctx, "nope",
			Message{Role: RoleUser, Content: []byte(`[]`)}),
		"ReplaceHistory": s.ReplaceHistory(ctx, "nope", "sum", nil),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.History(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("History = %v, want ErrNotFound", err)
	}
}

func TestTouchAndCloseAllSessions(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	for _, sess := range []Session{
		{ID: "a", ThreadKey: "C1:1"},
		{ID: "b", ThreadKey: "C1:2"},
		{ID: "c", ThreadKey: "C1:3", State: SessionClosed},
	} {
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	at := c.Now().Add(time.Hour)
	if err := s.TouchSession(ctx, "c", SessionLive, at); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSession(ctx, "c", "bogus", at); err == nil {
		t.Error("TouchSession with invalid state succeeded")
	}
	got, err := s.SessionByThread(ctx, "C1:3")
	if err != nil || got.State != SessionLive || !got.LastActivity.Equal(at) {
		t.Fatalf("after touch: %+v, %v", got, err)
	}

	n, err := s.CloseAllSessions(ctx)
	if err != nil || n != 3 {
		t.Fatalf("CloseAllSessions = %d, %v; want 3", n, err)
	}
	if n, err := s.CloseAllSessions(ctx); err != nil || n != 0 {
		t.Fatalf("second CloseAllSessions = %d, %v; want 0", n, err)
	}
	for _, key := range []string{"C1:1", "C1:2", "C1:3"} {
		if got, err := s.SessionByThread(ctx, key); err != nil || got.State != SessionClosed {
			t.Errorf("%s: %+v, %v; want closed", key, got, err)
		}
	}
}

// A model's answer, its tokens (the call's row of model_usage, the one
// record of tokens) and its event's answering mark are written together,
// or none of them.
func TestAppendAnswer(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "C1:1"}); err != nil {
		t.Fatal(err)
	}
	answer := Message{Role: RoleAssistant, Content: json.RawMessage(`[{"type":"text","text":"hi"}]`)}
	if _, err := s.InboxReceive(ctx, InboxEntry{EventID: "Ev1", Kind: "message", ChannelID: "C1", ThreadTS: "1",
		Event: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InboxStart(ctx, "Ev1", "trace"); err != nil {
		t.Fatal(err)
	}
	spent := &UsageRecord{ThreadKey: "C1:1", ChannelID: "C1", UserID: "U1", Model: "m1", Usage: Usage{Input: 10, Output: 20, CacheRead: 30, CacheWrite: 40}}
	if err := s.AppendAnswer(ctx, "s1", Answer{Spent: spent}, answer); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAnswer(ctx, "s1", Answer{}, answer); err != nil { // no usage: no row
		t.Fatal(err)
	}
	negative := &UsageRecord{ThreadKey: "C1:1", ChannelID: "C1", Model: "m1", Usage: Usage{Output: -1}}
	if err := s.AppendAnswer(ctx, "s1", Answer{Spent: negative}, answer); err == nil {
		t.Error("negative usage accepted")
	}
	bad := Message{Role: RoleAssistant, Content: json.RawMessage(`not json`)}
	lost := &UsageRecord{ThreadKey: "C1:1", ChannelID: "C1", UserID: "U1", Model: "m1", Usage: Usage{Input: 1000}}
	if err := s.AppendAnswer(ctx, "s1", Answer{Answering: "Ev1", Spent: lost}, answer, bad); err == nil {
		t.Error("an invalid message accepted")
	}
	if err := s.AppendAnswer(ctx, "nope", Answer{Answering: "Ev1", Spent: lost}, answer); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown session: %v, want ErrNotFound", err)
	}
	// The call's row of model_usage went with the first answer, and with
	// none of the failed ones.
	rows, err := s.UsageOf(ctx, UsageFilter{ThreadKey: "C1:1"})
	if err != nil || len(rows) != 1 || rows[0].Usage != spent.Usage || rows[0].Model != "m1" {
		t.Errorf("model usage = %+v, %v; want the first answer's alone", rows, err)
	}
	// The event is still running after the failed appends; a good one
	// marks it answering.
	if state := inboxState(t, s, "Ev1"); state != InboxRunning {
		t.Errorf("after failed appends, Ev1 is %q, want %q", state, InboxRunning)
	}
	if err := s.AppendAnswer(ctx, "s1", Answer{Answering: "Ev1"}, answer); err != nil {
		t.Fatal(err)
	}
	if state := inboxState(t, s, "Ev1"); state != InboxAnswering {
		t.Errorf("Ev1 is %q, want %q", state, InboxAnswering)
	}
	h, err := s.History(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 {
		t.Errorf("history has %d messages, want 3 (the failed appends wrote nothing)", len(h))
	}
}

// inboxState is the state of the inbox's event id.
func inboxState(t *testing.T, s *Store, id string) string {
	t.Helper()
	var state string
	if err := s.queryRow(t.Context(), "SELECT state FROM inbox WHERE event_id = ?", id).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return state
}

func TestNewID(t *testing.T) {
	valid := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id := NewID()
		if !valid.MatchString(id) {
			t.Fatalf("NewID() = %q, want 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}
