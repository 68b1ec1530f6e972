package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

func TestFleetNeedsAShareableStore(t *testing.T) {
	sqliteOnly(t)
	s, _ := newTestStore(t)
	if _, err := s.OpenFleet(t.Context(), "r1"); !errors.Is(err, ErrNotShared) {
		t.Fatalf("OpenFleet on SQLite = %v, want ErrNotShared", err)
	}
}

// twoReplicas opens the store twice on one Postgres database, as two
// replicas do, on clock c, with the fleet of each: replica-a and
// replica-b (closed after the test). It skips the test on SQLite.
func twoReplicas(t *testing.T, c *fake.Clock) (sa, sb *Store, a, b *Fleet) {
	t.Helper()
	if !onPostgres() {
		t.Skip("replicas share a Postgres database: runs in the Postgres run of the suite")
	}
	path := testPath(t)
	sa, sb = openAt(t, path, c), openAt(t, path, c)
	var err error
	if a, err = sa.OpenFleet(t.Context(), "replica-a"); err != nil {
		t.Fatal(err)
	}
	if b, err = sb.OpenFleet(t.Context(), "replica-b"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return sa, sb, a, b
}

// Two replicas on one Postgres: thread locks exclude each other, a
// replica's liveness is its lock, a dead replica's unfinished events are
// taken over once, older pending messages are told apart by owner, and
// notifications cross.
func TestFleet(t *testing.T) {
	ctx := t.Context()
	sa, sb, a, b := twoReplicas(t, newClock())
	if _, err := sb.OpenFleet(ctx, "replica-a"); err == nil {
		t.Fatal("a second process took a live replica's id")
	}

	// Thread locks.
	unlock, err := a.LockThread(ctx, "D1:1.0")
	if err != nil {
		t.Fatal(err)
	}
	if busy, err := b.ThreadBusy(ctx, "D1:1.0"); err != nil || !busy {
		t.Fatalf("ThreadBusy while a holds it = %v, %v", busy, err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = b.LockThread(short, "D1:1.0")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b took a thread a holds: %v", err)
	}
	unlock()
	unlockB, err := b.LockThread(ctx, "D1:1.0")
	if err != nil {
		t.Fatalf("b after a let go: %v", err)
	}
	unlockB()

	// a receives three messages of one thread, starts the first.
	for i, ts := range []string{"1.0", "1.1", "1.2"} {
		ev, _ := json.Marshal(map[string]string{"ts": ts})
		if _, err := sa.InboxReceive(ctx, InboxEntry{EventID: "ev" + ts, Kind: "message", ChannelID: "D1", ThreadTS: "1.0",
			MsgKey: "D1:" + ts, Event: ev}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := sa.InboxStart(ctx, "ev1.0", "trace"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, err := b.EarlierPending(ctx, "D1", "1.0", "D1:1.2"); err != nil || got != EarlierElsewhere {
		t.Fatalf("b, behind a's live messages: %v, %v; want EarlierElsewhere", got, err)
	}
	if got, err := a.EarlierPending(ctx, "D1", "1.0", "D1:1.2"); err != nil || got != EarlierHere {
		t.Fatalf("a, behind its own: %v, %v; want EarlierHere", got, err)
	}
	if got, err := b.EarlierPending(ctx, "D1", "1.0", "D1:1.0"); err != nil || got != EarlierNone {
		t.Fatalf("the oldest: %v, %v; want EarlierNone", got, err)
	}
	// An answer about to be posted is still pending: a replica that dies
	// before its post leaves the message to be read back or run again.
	if err := sa.InboxAnswering(ctx, "ev1.0"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.EarlierPending(ctx, "D1", "1.0", "D1:1.1"); err != nil || got != EarlierElsewhere {
		t.Fatalf("b, behind a's message being answered: %v, %v; want EarlierElsewhere", got, err)
	}
	if orphans, err := b.ClaimOrphans(ctx); err != nil || len(orphans) != 0 {
		t.Fatalf("b claimed a live replica's events: %v, %v", orphans, err)
	}

	// Notifications cross.
	got := make(chan string, 1)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_ = b.Listen(lctx, func(channel, payload string) { got <- channel + "/" + payload }, "agent_test")
	}()
	deadline := time.After(10 * time.Second)
	for heard := false; !heard; {
		if err := a.Notify(ctx, "agent_test", "ap1"); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-got:
			if m != "agent_test/ap1" {
				t.Fatalf("heard %q", m)
			}
			heard = true
		case <-time.After(50 * time.Millisecond): // b may not listen yet
		case <-deadline:
			t.Fatal("b never heard a's notification")
		}
	}

	// a dies: its locks go, b takes its events over, once.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if alive, err := b.Alive(ctx, "replica-a"); err != nil || alive {
		t.Fatalf("Alive(a) after it closed = %v, %v", alive, err)
	}
	if got, err := b.EarlierPending(ctx, "D1", "1.0", "D1:1.2"); err != nil || got != EarlierHere {
		t.Fatalf("behind a dead replica's messages: %v, %v; want EarlierHere (taken over here)", got, err)
	}
	orphans, err := b.ClaimOrphans(ctx)
	if err != nil || len(orphans) != 3 || orphans[0].Owner != "replica-b" {
		t.Fatalf("ClaimOrphans = %+v, %v; want a's three events", orphans, err)
	}
	if again, err := b.ClaimOrphans(ctx); err != nil || len(again) != 0 {
		t.Fatalf("claimed twice: %+v, %v", again, err)
	}
	if busy, err := b.ThreadBusy(ctx, "D1:1.0"); err != nil || busy {
		t.Fatalf("the thread is busy with nobody at it: %v, %v", busy, err)
	}
}
