package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

func TestInboxLifecycle(t *testing.T) {
	s, clk := newTestStore(t)
	ctx := t.Context()
	entry := func(id string) InboxEntry {
		return InboxEntry{EventID: id, Kind: "message", ChannelID: "D1", ThreadTS: "1.1", UserID: "U1", MsgKey: "D1:" + id,
			Event: json.RawMessage(`{"id":"` + id + `"}`)}
	}
	for i, want := range []bool{true, false} {
		if fresh, err := s.InboxReceive(ctx, entry("e1")); err != nil || fresh != want {
			t.Fatalf("receive #%d = %v, %v", i+1, fresh, err)
		}
	}
	if _, err := s.InboxReceive(ctx, InboxEntry{EventID: "bad", Event: json.RawMessage("{")}); err == nil {
		t.Fatal("a non-JSON event was recorded")
	}
	clk.Advance(time.Second)
	if _, err := s.InboxReceive(ctx, entry("e2")); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 2; want++ {
		if n, err := s.InboxStart(ctx, "e1", "trace-1"); err != nil || n != want {
			t.Fatalf("start = %d, %v; want %d", n, err, want)
		}
	}
	un, err := s.InboxUnfinished(ctx)
	if err != nil || len(un) != 2 || un[0].EventID != "e1" || un[0].State != InboxRunning || un[0].Attempts != 2 || un[0].TraceID != "trace-1" || un[1].State != InboxReceived {
		t.Fatalf("unfinished = %+v, %v", un, err)
	}
	if err := s.InboxAnswering(ctx, "e1"); err != nil {
		t.Fatal(err)
	}
	if un, _ := s.InboxUnfinished(ctx); len(un) != 2 || un[0].State != InboxAnswering {
		t.Fatalf("unfinished after answering: %+v", un)
	}
	if err := s.InboxFinish(ctx, "e1", InboxAnswered, ""); err != nil {
		t.Fatal(err)
	}
	// Final states stay: a later failure does not overwrite the answer, and
	// a start after the answer is not counted.
	if err := s.InboxFinish(ctx, "e1", InboxFailed, "late"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.InboxStart(ctx, "e1", "trace-2"); err != nil || n != 0 {
		t.Fatalf("start after the answer = %d, %v", n, err)
	}
	if err := s.InboxFinish(ctx, "e2", "running", ""); err == nil {
		t.Fatal("running accepted as a final state")
	}
	if err := s.InboxFinish(ctx, "e2", InboxFailed, "boom"); err != nil {
		t.Fatal(err)
	}
	all, err := s.InboxList(ctx, "", 0)
	if err != nil || len(all) != 2 || all[0].State != InboxAnswered || all[1].State != InboxFailed || all[1].Error != "boom" {
		t.Fatalf("list = %+v, %v", all, err)
	}
	for key, want := range map[string]bool{"D1:e1": true, "D1:e2": false, "": false} {
		if ok, err := s.InboxAnsweredKey(ctx, key); err != nil || ok != want {
			t.Errorf("answered key %q = %v, %v", key, ok, err)
		}
	}
	if un, _ := s.InboxUnfinished(ctx); len(un) != 0 {
		t.Fatalf("unfinished after finishing: %+v", un)
	}
	clk.Advance(time.Hour)
	if n, err := s.PruneInbox(ctx, clk.Now().Add(-time.Minute)); err != nil || n != 2 {
		t.Fatalf("prune = %d, %v", n, err)
	}
}

func TestHistoryKeepsEventID(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	const sess = "s-inbox"
	newSession(t, s, sess)
	if err := s.AppendMessages(ctx, sess, Message{Role: RoleUser, Content: json.RawMessage(`[]`), EventID: "ev1"},
		Message{Role: RoleAssistant, Content: json.RawMessage(`[]`)}); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, sess)
	if err != nil || len(h) != 2 || h[0].EventID != "ev1" || h[1].EventID != "" {
		t.Fatalf("history: %+v %v", h, err)
	}
}

// BenchmarkInboxReceive is the write on the ack path: one event recorded
// before its envelope is acknowledged.
func BenchmarkInboxReceive(b *testing.B) {
	s, _ := newTestStore(b)
	ctx := b.Context()
	event := json.RawMessage(`{"ID":"Ev","Kind":1,"ChannelID":"D0MGR","ChannelType":"im","UserID":"U0MGR","TS":"1700000000.000100","Text":"can you summarise the last deploy and tell me what failed?"}`)
	i := 0
	for b.Loop() {
		i++
		id := "Ev" + strconv.Itoa(i)
		if _, err := s.InboxReceive(ctx, InboxEntry{EventID: id, Kind: "message", ChannelID: "D0MGR", ThreadTS: "1.1",
			UserID: "U0MGR", MsgKey: "D0MGR:" + id, Event: event}); err != nil {
			b.Fatal(err)
		}
	}
}

// Receiving an event records its dedupe key in the same write: the first
// event of a key is marked, its twin (another event id, the same key) is
// received but not marked, and a redelivery is neither.
func TestInboxReceiveMark(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	entry := func(id string) InboxEntry {
		return InboxEntry{EventID: id, Kind: "message", ChannelID: "C1", ThreadTS: "1.1", MsgKey: "C1:1.1", Event: json.RawMessage(`{}`)}
	}
	fresh, marked, err := s.InboxReceiveMark(ctx, entry("Ev1"), "ts:C1:1.1")
	if err != nil || !fresh || !marked {
		t.Fatalf("first receive: fresh %v, marked %v, %v; want true, true", fresh, marked, err)
	}
	if seen, err := s.EventSeen(ctx, "ts:C1:1.1"); err != nil || !seen {
		t.Errorf("EventSeen after the receive: %v, %v", seen, err)
	}
	if fresh, marked, err = s.InboxReceiveMark(ctx, entry("Ev2"), "ts:C1:1.1"); err != nil || !fresh || marked {
		t.Errorf("the twin: fresh %v, marked %v, %v; want true, false", fresh, marked, err)
	}
	if fresh, marked, err = s.InboxReceiveMark(ctx, entry("Ev1"), "ts:C1:1.1"); err != nil || fresh || marked {
		t.Errorf("a redelivery: fresh %v, marked %v, %v; want false, false", fresh, marked, err)
	}
	if fresh, marked, err = s.InboxReceiveMark(ctx, entry("Ev3"), ""); err != nil || !fresh || marked {
		t.Errorf("no key: fresh %v, marked %v, %v; want true, false", fresh, marked, err)
	}
	for id, want := range map[string]string{"Ev1": InboxReceived, "Ev2": InboxReceived, "Ev3": InboxReceived} {
		if e := inboxEntry(t, s, id); e.State != want || e.Attempts != 0 {
			t.Errorf("%s: %s after %d attempts, want %s after 0", id, e.State, e.Attempts, want)
		}
	}
}

// A start carried by a context is written by the first write made with
// it, in that write's transaction, and once: a write that fails leaves it
// for the next; a write without a transaction records it first; other
// contexts never write it.
func TestWithInboxStart(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	receiveEvents(t, s, "Ev1", "Ev2")
	started := WithInboxStart(ctx, "Ev1", "trace-1")
	if e := inboxEntry(t, s, "Ev1"); e.State != InboxReceived {
		t.Fatalf("written before any write: %s", e.State)
	}
	// A write made without the context leaves it alone.
	if err := s.CreateSession(ctx, Session{ID: NewID(), ThreadKey: "C1:0.1"}); err != nil {
		t.Fatal(err)
	}
	if e := inboxEntry(t, s, "Ev1"); e.State != InboxReceived {
		t.Fatalf("written by another context's write: %s", e.State)
	}
	// A write that fails rolls the start back with it.
	if err := s.CreateSession(started, Session{ID: NewID(), ThreadKey: "C1:0.1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second session for the thread: %v", err)
	}
	if e := inboxEntry(t, s, "Ev1"); e.State != InboxReceived || e.Attempts != 0 {
		t.Fatalf("after a failed write: %s after %d attempts", e.State, e.Attempts)
	}
	// The next one carries it, from a context made from that one.
	sid := NewID()
	if err := s.CreateSession(context.WithoutCancel(started), Session{ID: sid, ThreadKey: "C1:1.1"}); err != nil {
		t.Fatal(err)
	}
	e := inboxEntry(t, s, "Ev1")
	if e.State != InboxRunning || e.Attempts != 1 || e.TraceID != "trace-1" {
		t.Fatalf("after the first write: %s after %d attempts, trace %q", e.State, e.Attempts, e.TraceID)
	}
	// Once.
	if err := s.AppendMessages(started, sid, Message{Role: RoleUser, Content: json.RawMessage(`[{"type":"text","text":"hi"}]`)}); err != nil {
		t.Fatal(err)
	}
	if e := inboxEntry(t, s, "Ev1"); e.Attempts != 1 {
		t.Errorf("started again by a later write: %d attempts", e.Attempts)
	}
	// A single-statement write records it before its own statement.
	other := WithInboxStart(ctx, "Ev2", "trace-2")
	if err := s.InboxFinish(other, "Ev2", InboxDropped, ""); err != nil {
		t.Fatal(err)
	}
	if e := inboxEntry(t, s, "Ev2"); e.State != InboxDropped || e.Attempts != 1 || e.TraceID != "trace-2" {
		t.Errorf("finished with its start: %s after %d attempts, trace %q", e.State, e.Attempts, e.TraceID)
	}
}

// An event's final state owed by its context is written by the context's
// next write, in its transaction, and told once; a write that fails keeps
// it owed; Flush writes it when no write came, and nothing when nothing is
// owed; another event's context owes nothing.
func TestOweInboxFinish(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	receiveEvents(t, s, "Ev1", "Ev2")
	sid := NewID()
	if err := s.CreateSession(ctx, Session{ID: sid, ThreadKey: "C1:1.1"}); err != nil {
		t.Fatal(err)
	}
	ev1 := WithInboxStart(ctx, "Ev1", "trace-1")
	if err := s.InboxAnswering(ev1, "Ev1"); err != nil {
		t.Fatal(err)
	}
	if owed, err := s.OweInboxFinish(ev1, "Ev2", InboxAnswered, "", nil); owed || err != nil {
		t.Fatalf("owed by another event's context: %v, %v", owed, err)
	}
	if owed, err := s.OweInboxFinish(ctx, "Ev1", InboxAnswered, "", nil); owed || err != nil {
		t.Fatalf("owed by a context without an event: %v, %v", owed, err)
	}
	if _, err := s.OweInboxFinish(ev1, "Ev1", InboxRunning, "", nil); err == nil {
		t.Fatal("a state that is not final was owed")
	}
	told := 0
	if owed, err := s.OweInboxFinish(ev1, "Ev1", InboxAnswered, "", func() { told++ }); !owed || err != nil {
		t.Fatalf("OweInboxFinish = %v, %v", owed, err)
	}
	if e := inboxEntry(t, s, "Ev1"); e.State != InboxAnswering {
		t.Fatalf("written before any write: %s", e.State)
	}
	// A failed write keeps it owed.
	if err := s.CreateSession(ev1, Session{ID: NewID(), ThreadKey: "C1:1.1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second session for the thread: %v", err)
	}
	if e := inboxEntry(t, s, "Ev1"); e.State != InboxAnswering || told != 0 {
		t.Fatalf("after a failed write: %s, told %d times", e.State, told)
	}
	// The next write takes it.
	if err := s.AppendMessages(context.WithoutCancel(ev1), sid, Message{Role: RoleUser,
		Content: json.RawMessage(`[{"type":"tool_result","tool_use_id":"t1","content":"posted"}]`)}); err != nil {
		t.Fatal(err)
	}
	if e := inboxEntry(t, s, "Ev1"); e.State != InboxAnswered || told != 1 {
		t.Fatalf("after the next write: %s, told %d times", e.State, told)
	}
	if err := s.Flush(ev1); err != nil || told != 1 {
		t.Fatalf("Flush with nothing owed: %v, told %d times", err, told)
	}
	// Flush writes what no write took.
	ev2 := WithInboxStart(ctx, "Ev2", "trace-2")
	if owed, err := s.OweInboxFinish(ev2, "Ev2", InboxFailed, "model down", nil); !owed || err != nil {
		t.Fatalf("OweInboxFinish = %v, %v", owed, err)
	}
	if err := s.Flush(ev2); err != nil {
		t.Fatal(err)
	}
	if e := inboxEntry(t, s, "Ev2"); e.State != InboxFailed || e.Error != "model down" || e.Attempts != 1 {
		t.Errorf("flushed: %s (%q) after %d attempts", e.State, e.Error, e.Attempts)
	}
	if err := s.Flush(ctx); err != nil {
		t.Errorf("Flush of a context without an event: %v", err)
	}
}

// receiveEvents records messages of thread C1:1.1 in the inbox.
func receiveEvents(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.InboxReceive(t.Context(), InboxEntry{EventID: id, Kind: "message", ChannelID: "C1", ThreadTS: "1.1",
			Event: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
}

// inboxEntry reads one event's inbox record.
func inboxEntry(t *testing.T, s *Store, id string) InboxEntry {
	t.Helper()
	all, err := s.InboxList(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.EventID == id {
			return e
		}
	}
	t.Fatalf("no inbox record for %s", id)
	return InboxEntry{}
}

// A session deferred to an event's context is stored by the event's next
// write, in its transaction, after the event's start; written is told then
// and not before; a cancelled one is not stored; without an event in the
// context nothing is deferred; a row already stored by an earlier owner is
// no conflict, another session of the thread is.
func TestDeferSession(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	receiveEvents(t, s, "Ev1")
	if ok, _, err := s.DeferSession(ctx, Session{ID: NewID(), ThreadKey: "C1:1.1"}, nil); ok || err != nil {
		t.Fatalf("deferred without an event: %v, %v", ok, err)
	}
	ev := WithInboxStart(ctx, "Ev1", "trace-1")
	if _, _, err := s.DeferSession(ev, Session{ThreadKey: "C1:1.1"}, nil); err == nil {
		t.Error("a session without an id deferred")
	}
	sid := NewID()
	var written atomic.Int32
	ok, _, err := s.DeferSession(ev, Session{ID: sid, ThreadKey: "C1:1.1"}, func() { written.Add(1) })
	if !ok || err != nil {
		t.Fatalf("DeferSession: %v, %v", ok, err)
	}
	ok, cancel, err := s.DeferSession(ev, Session{ID: NewID(), ThreadKey: "C1:2.1"}, func() { t.Error("a cancelled session written") })
	if !ok || err != nil {
		t.Fatalf("DeferSession: %v, %v", ok, err)
	}
	cancel()
	if _, err := s.SessionByThread(ctx, "C1:1.1"); !errors.Is(err, ErrNotFound) || written.Load() != 0 {
		t.Fatalf("stored before a write: %v, written %d", err, written.Load())
	}
	// The event's message: the start, the session and the message in one
	// transaction.
	if err := s.AppendMessages(ev, sid, Message{Role: RoleUser, Content: json.RawMessage(`[{"type":"text","text":"hi"}]`)}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.SessionByThread(ctx, "C1:1.1"); err != nil || got.ID != sid || got.State != SessionLive {
		t.Fatalf("after the write: %+v, %v", got, err)
	}
	if written.Load() != 1 {
		t.Errorf("written told %d times, want 1", written.Load())
	}
	// The next write of the context finds the session created: its
	// message follows the first.
	if err := s.AppendMessages(ev, sid, Message{Role: RoleAssistant, Content: json.RawMessage(`[{"type":"text","text":"hello"}]`)}); err != nil {
		t.Fatal(err)
	}
	// A session owed again whose row exists (written by an earlier event):
	// the message of that write goes after the stored ones.
	receiveEvents(t, s, "Ev5")
	fifth := WithInboxStart(ctx, "Ev5", "trace-5")
	if _, _, err := s.DeferSession(fifth, Session{ID: sid, ThreadKey: "C1:1.1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(fifth, sid, Message{Role: RoleUser, Content: json.RawMessage(`[{"type":"text","text":"more"}]`)}); err != nil {
		t.Fatal(err)
	}
	if h, err := s.History(ctx, sid); err != nil || len(h) != 3 || h[0].Seq != 1 || h[1].Seq != 2 || h[2].Seq != 3 ||
		!strings.Contains(string(h[2].Content), "more") {
		t.Fatalf("history = %+v, %v; want the three messages in order", h, err)
	}
	if e := inboxEntry(t, s, "Ev1"); e.State != InboxRunning || e.Attempts != 1 {
		t.Errorf("the event: %s after %d attempts", e.State, e.Attempts)
	}
	if _, err := s.SessionByThread(ctx, "C1:2.1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the cancelled session: %v", err)
	}
	// Owed again by a later event (the first one's writes might have
	// failed): no conflict. Another session of the thread: a conflict.
	again := WithInboxStart(ctx, "Ev2", "trace-2")
	if _, _, err := s.DeferSession(again, Session{ID: sid, ThreadKey: "C1:1.1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.InboxFinish(again, "Ev2", InboxDropped, ""); err != nil {
		t.Errorf("a session owed twice: %v", err)
	}
	other := WithInboxStart(ctx, "Ev3", "trace-3")
	if _, _, err := s.DeferSession(other, Session{ID: NewID(), ThreadKey: "C1:1.1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(other, sid, Message{Role: RoleUser, Content: json.RawMessage(`[{"type":"text","text":"again"}]`)}); !errors.Is(err, ErrConflict) {
		t.Errorf("a second session for the thread: %v, want a conflict", err)
	}
	if h, err := s.History(ctx, sid); err != nil || len(h) != 3 {
		t.Errorf("the failed write's message stored: %d messages, %v", len(h), err)
	}

	// Before a write of single statements, what is owed is one
	// transaction of its own: a conflicting session takes the start back
	// with it, and the start is written once, when the session is
	// withdrawn.
	if _, err := s.InboxReceive(ctx, InboxEntry{EventID: "Ev4", Kind: "message", ChannelID: "C1", ThreadTS: "4.1",
		Event: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	fourth := WithInboxStart(ctx, "Ev4", "trace-4")
	_, cancel, err = s.DeferSession(fourth, Session{ID: NewID(), ThreadKey: "C1:1.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InboxFinish(fourth, "Ev4", InboxDropped, ""); !errors.Is(err, ErrConflict) {
		t.Fatalf("finish owing a conflicting session: %v, want a conflict", err)
	}
	if e := inboxEntry(t, s, "Ev4"); e.State != InboxReceived || e.Attempts != 0 {
		t.Fatalf("after the failed write: %s after %d attempts", e.State, e.Attempts)
	}
	cancel()
	if err := s.InboxFinish(fourth, "Ev4", InboxDropped, ""); err != nil {
		t.Fatal(err)
	}
	if e := inboxEntry(t, s, "Ev4"); e.State != InboxDropped || e.Attempts != 1 {
		t.Errorf("after the write: %s after %d attempts, want dropped after 1", e.State, e.Attempts)
	}
}

// On Postgres a new event is recorded while writes are under way, this
// replica's (its writer slot taken) or another's (the writer lock taken):
// the intake of every event must not queue behind the turns' writes.
func TestInboxReceiveBesideWriters(t *testing.T) {
	if !onPostgres() {
		t.Skip("SQLite has one writer: the receive waits its turn there")
	}
	path, c := testPath(t), newClock()
	s, other := openAt(t, path, c), openAt(t, path, c)
	for _, tt := range []struct {
		name   string
		writer *Store
	}{{"this replica writing", s}, {"another replica writing", other}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				done <- tt.writer.inTx(ctx, func(context.Context, bun.Tx) error {
					close(holding)
					<-release
					return nil
				})
			}()
			select {
			case <-holding:
			case err := <-done:
				t.Fatalf("the write transaction: %v", err)
			}
			id := "Ev-" + strings.ReplaceAll(tt.name, " ", "-")
			fresh, _, err := s.InboxReceiveMark(ctx, InboxEntry{EventID: id, Kind: "message", ChannelID: "C1", ThreadTS: "1.1",
				MsgKey: "C1:1.1", Event: json.RawMessage(`{}`)}, "ts:"+id)
			close(release)
			if werr := <-done; werr != nil {
				t.Error(werr)
			}
			if err != nil || !fresh {
				t.Fatalf("receive while a write transaction runs: fresh %v, %v", fresh, err)
			}
		})
	}
}
