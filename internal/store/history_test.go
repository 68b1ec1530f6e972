package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

func newSession(t testing.TB, s *Store, id string) {
	t.Helper()
	if err := s.CreateSession(t.Context(), Session{ID: id, ThreadKey: "thread-" + id}); err != nil {
		t.Fatal(err)
	}
}

func text(s string) json.RawMessage {
	b, _ := json.Marshal([]map[string]string{{"type": "text", "text": s}})
	return b
}

// texts returns the text of each message's single content block.
func texts(t testing.TB, msgs []Message) []string {
	t.Helper()
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var blocks []map[string]string
		if err := json.Unmarshal(m.Content, &blocks); err != nil || len(blocks) != 1 {
			t.Fatalf("message %d content %s: %v", i, m.Content, err)
		}
		out[i] = blocks[0]["text"]
	}
	return out
}

func TestAppendMessagesAndHistory(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	newSession(t, s, "s1")

	if h, err := s.History(ctx, "s1"); err != nil || len(h) != 0 {
		t.Fatalf("History of new session = %v, %v; want empty", h, err)
	}
	c.Advance(time.Minute)
	explicit := c.Now().Add(-time.Second)
	err := s.AppendMessages(ctx, "s1",
		Message{Role: RoleUser, Content: text("one"), Seq: 99},
		Message{SessionID: "s1", Role: RoleAssistant, Content: text("two"), CreatedAt: explicit})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if err := s.AppendMessages(ctx, "s1", Message{Role: RoleUser, Content: text("three")}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(ctx, "s1"); err != nil {
		t.Fatalf("appending nothing: %v", err)
	}

	h, err := s.History(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(t, h), []string{"one", "two", "three"}; !slices.Equal(got, want) {
		t.Fatalf("History texts = %q, want %q", got, want)
	}
	for i, m := range h {
		if m.Seq != int64(i+1) || m.SessionID != "s1" {
			t.Errorf("message %d: seq %d session %q", i, m.Seq, m.SessionID)
		}
	}
	if h[0].Role != RoleUser || h[1].Role != RoleAssistant {
		t.Errorf("roles = %s, %s", h[0].Role, h[1].Role)
	}
	if !h[1].CreatedAt.Equal(explicit) || !h[2].CreatedAt.Equal(c.Now()) {
		t.Errorf("CreatedAt = %v, %v; want %v, %v", h[1].CreatedAt, h[2].CreatedAt, explicit, c.Now())
	}
	sess, err := s.SessionByThread(ctx, "thread-s1")
	if err != nil || !sess.LastActivity.Equal(c.Now()) {
		t.Errorf("LastActivity = %v, %v; want %v", sess.LastActivity, err, c.Now())
	}
}

func TestAppendMessagesInvalid(t *testing.T) {
	s, _ := newTestStore(t)
	newSession(t, s, "s1")
	for name, m := range map[string]Message{
		"other session": {SessionID: "s2", Role: RoleUser, Content: text("x")},
		"bad role":      {Role: "system", Content: text("x")},
		"bad json":      {Role: RoleUser, Content: []byte(`{"type":`)},
		"no content":    {Role: RoleUser},
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.AppendMessages(t.Context(), "s1", m); err == nil {
				t.Error("AppendMessages succeeded")
			}
		})
	}
}

func TestAppendMessagesConcurrentSeqContiguous(t *testing.T) {
	s, _ := newTestStore(t)
	newSession(t, s, "s1")
	const writers, batches = 8, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				err := s.AppendMessages(t.Context(), "s1",
					Message{Role: RoleUser, Content: text(fmt.Sprintf("w%d-b%d-q", w, b))},
					Message{Role: RoleAssistant, Content: text(fmt.Sprintf("w%d-b%d-a", w, b))})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()

	h, err := s.History(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != writers*batches*2 {
		t.Fatalf("%d messages, want %d", len(h), writers*batches*2)
	}
	for i, m := range h {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d: not contiguous", i, m.Seq)
		}
	}
	// A batch is one transaction: its two messages stay adjacent.
	tx := texts(t, h)
	for i := 0; i < len(tx); i += 2 {
		if tx[i][:len(tx[i])-1] != tx[i+1][:len(tx[i+1])-1] {
			t.Fatalf("batch split: %q then %q", tx[i], tx[i+1])
		}
	}
}

func TestReplaceHistory(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	newSession(t, s, "s1")
	newSession(t, s, "s2")
	for _, id := range []string{"s1", "s2"} {
		if err := s.AppendMessages(ctx, id,
			Message{Role: RoleUser, Content: text("a")},
			Message{Role: RoleAssistant, Content: text("b")},
			Message{Role: RoleUser, Content: text("c")}); err != nil {
			t.Fatal(err)
		}
	}
	old, err := s.History(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}

	c.Advance(time.Minute)
	if err := s.ReplaceHistory(ctx, "s1", "talked about a and b", old[2:]); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Seq != 1 || texts(t, h)[0] != "c" || !h[0].CreatedAt.Equal(old[2].CreatedAt) {
		t.Errorf("History after replace = %+v", h)
	}
	sess, err := s.SessionByThread(ctx, "thread-s1")
	if err != nil || sess.Summary != "talked about a and b" {
		t.Errorf("Summary = %q, %v", sess.Summary, err)
	}
	if err := s.AppendMessages(ctx, "s1", Message{Role: RoleAssistant, Content: text("d")}); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.History(ctx, "s1"); len(h) != 2 || h[1].Seq != 2 {
		t.Errorf("append after replace: %+v, want seq 2", h)
	}
	if h, _ := s.History(ctx, "s2"); len(h) != 3 {
		t.Errorf("other session has %d messages, want 3 untouched", len(h))
	}

	if err := s.ReplaceHistory(ctx, "s1", "empty", nil); err != nil {
		t.Fatal(err)
	}
	if h, err := s.History(ctx, "s1"); err != nil || len(h) != 0 {
		t.Errorf("History after replace with nothing = %v, %v", h, err)
	}
}

// failOnText installs a trigger that makes SQLite reject inserting a
// message with this text, so a write fails half-way through its
// transaction, after the Go-side checks passed.
func failOnText(t *testing.T, s *Store, bad string) {
	t.Helper()
	query := `
		CREATE TRIGGER fail_message BEFORE INSERT ON messages
		WHEN NEW.content = ? BEGIN SELECT RAISE(ABORT, 'injected failure'); END`
	if onPostgres() {
		query = `
		CREATE FUNCTION fail_message() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.content = ? THEN RAISE EXCEPTION 'injected failure'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER fail_message BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION fail_message()`
	}
	_, err := s.DB().ExecContext(t.Context(), query, string(text(bad)))
	if err != nil {
		t.Fatal(err)
	}
}

func TestHistoryWritesAreAtomic(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	newSession(t, s, "s1")
	if err := s.AppendMessages(ctx, "s1",
		Message{Role: RoleUser, Content: text("a")},
		Message{Role: RoleAssistant, Content: text("b")}); err != nil {
		t.Fatal(err)
	}
	before, err := s.SessionByThread(ctx, "thread-s1")
	if err != nil {
		t.Fatal(err)
	}
	failOnText(t, s, "boom")
	c.Advance(time.Hour)

	if err := s.AppendMessages(ctx, "s1",
		Message{Role: RoleUser, Content: text("ok")},
		Message{Role: RoleAssistant, Content: text("boom")}); err == nil {
		t.Fatal("AppendMessages succeeded despite the trigger")
	}
	if err := s.ReplaceHistory(ctx, "s1", "summary",
		[]Message{{Role: RoleUser, Content: text("ok")}, {Role: RoleAssistant, Content: text("boom")}}); err == nil {
		t.Fatal("ReplaceHistory succeeded despite the trigger")
	}

	h, err := s.History(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(t, h); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("history after failed writes = %q, want [a b]", got)
	}
	after, err := s.SessionByThread(ctx, "thread-s1")
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("session changed by failed writes:\n%+v\nwant\n%+v", after, before)
	}
}

// Readers racing ReplaceHistory see the whole old history or the whole
// new one.
func TestReplaceHistoryIsolation(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	newSession(t, s, "s1")
	var v0 []Message
	for i := range 6 {
		v0 = append(v0, Message{Role: RoleUser, Content: text("v0-" + strconv.Itoa(i))})
	}
	if err := s.AppendMessages(ctx, "s1", v0...); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				h, err := s.History(ctx, "s1")
				if err != nil {
					t.Error(err)
					return
				}
				tx := texts(t, h)
				if len(tx) != 6 && len(tx) != 3 {
					t.Errorf("reader saw %d messages: %q", len(tx), tx)
					return
				}
				for _, x := range tx {
					if x[:3] != tx[0][:3] {
						t.Errorf("reader saw a mix: %q", tx)
						return
					}
				}
			}
		})
	}
	for v := 1; v <= 20; v++ {
		var keep []Message
		for i := range 6 - 3*(v%2) {
			keep = append(keep, Message{Role: RoleUser, Content: text(fmt.Sprintf("v%d-%d", v%10, i))})
		}
		if err := s.ReplaceHistory(ctx, "s1", "v"+strconv.Itoa(v), keep); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
}

func BenchmarkAppendMessages(b *testing.B) {
	s, _ := newTestStore(b)
	newSession(b, s, "s1")
	ctx := b.Context()
	q := Message{Role: RoleUser, Content: text("what changed in the deploy pipeline this week?")}
	a := Message{Role: RoleAssistant, Content: text("Three things: the cache key, the retry budget and the canary step.")}
	for b.Loop() {
		if err := s.AppendMessages(ctx, "s1", q, a); err != nil {
			b.Fatal(err)
		}
	}
}

// Values are inlined into SQL by bun, so check content comes back byte for
// byte, whitespace, quotes and placeholders included.
func TestContentRoundTrip(t *testing.T) {
	s, _ := newTestStore(t)
	newSession(t, s, "s1")
	content := json.RawMessage("[ {\"type\": \"text\",\n \"text\": \"it's ? and ?0 and \\\\ and \\u0000 and 'x'' -- é 🚀\"} ]")
	if err := s.AppendMessages(t.Context(), "s1", Message{Role: RoleUser, Content: content}); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(t.Context(), "s1")
	if err != nil || len(h) != 1 {
		t.Fatalf("History = %v, %v", h, err)
	}
	if string(h[0].Content) != string(content) {
		t.Errorf("content =\n%s\nwant\n%s", h[0].Content, content)
	}
}

// BenchmarkAppendAnswer is the write a turn makes before it posts its
// reply: the model's tool call, what the call cost and the event's
// answering mark, one transaction.
func BenchmarkAppendAnswer(b *testing.B) {
	s, _ := newTestStore(b)
	newSession(b, s, "s1")
	ctx := b.Context()
	call := Message{Role: RoleAssistant, Content: json.RawMessage(`[{"type":"tool_use","id":"t1","name":"mcp__agent_chat__reply","input":{"text":"ack"}}]`)}
	if _, err := s.InboxReceive(ctx, InboxEntry{EventID: "Ev1", Kind: "message", ChannelID: "D1", Event: json.RawMessage(`{}`)}); err != nil {
		b.Fatal(err)
	}
	a := Answer{Answering: "Ev1", Spent: &UsageRecord{ThreadKey: "thread-s1", ChannelID: "D1", UserID: "U1", Model: "m",
		Usage: Usage{Input: 900, Output: 40}}}
	for b.Loop() {
		if err := s.AppendAnswer(ctx, "s1", a, call); err != nil {
			b.Fatal(err)
		}
	}
}
