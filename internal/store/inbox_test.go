package store

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
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

// Starting an event records its dedupe key in the same write: the first
// event of a key is fresh, its twin (another event id, the same key) is
// not, and both are started.
func TestInboxStartMark(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	for _, id := range []string{"Ev1", "Ev2"} {
		if _, err := s.InboxReceive(ctx, InboxEntry{EventID: id, Kind: "message", ChannelID: "C1", ThreadTS: "1.1",
			MsgKey: "C1:1.1", Event: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	attempts, fresh, err := s.InboxStartMark(ctx, "Ev1", "t1", "ts:C1:1.1")
	if err != nil || attempts != 1 || !fresh {
		t.Fatalf("first start: attempts %d, fresh %v, %v; want 1, true", attempts, fresh, err)
	}
	if seen, err := s.EventSeen(ctx, "ts:C1:1.1"); err != nil || !seen {
		t.Errorf("EventSeen after the start: %v, %v", seen, err)
	}
	attempts, fresh, err = s.InboxStartMark(ctx, "Ev2", "t2", "ts:C1:1.1")
	if err != nil || attempts != 1 || fresh {
		t.Errorf("the twin's start: attempts %d, fresh %v, %v; want 1, false", attempts, fresh, err)
	}
	attempts, fresh, err = s.InboxStartMark(ctx, "Ev1", "t3", "ts:C1:1.1")
	if err != nil || attempts != 2 || fresh {
		t.Errorf("a second start: attempts %d, fresh %v, %v; want 2, false", attempts, fresh, err)
	}
	if _, _, err := s.InboxStartMark(ctx, "Ev1", "t4", ""); err == nil {
		t.Error("an empty key accepted")
	}
}
