package store

import (
	"encoding/json"
	"testing"
)

// TurnStarter names the person whose event another live replica runs in
// the thread: never an event of the asking replica (the /abort it is
// handling), nor of a dead one.
func TestFleetTurnStarter(t *testing.T) {
	ctx := t.Context()
	c := newClock()
	sa, sb, a, b := twoReplicas(t, c)
	receive := func(s *Store, id, user, ts string) {
		t.Helper()
		ev, _ := json.Marshal(map[string]string{"ts": ts})
		if _, err := s.InboxReceive(ctx, InboxEntry{EventID: id, Kind: "message", ChannelID: "C1", ThreadTS: "1.0",
			UserID: user, MsgKey: "C1:" + ts, Event: ev}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.InboxStart(ctx, id, "trace"); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := b.TurnStarter(ctx, "C1", "1.0"); ok || err != nil {
		t.Fatalf("TurnStarter with nothing running = %v, %v; want none", ok, err)
	}
	receive(sa, "ev1", "U0ALICE", "1.0") // alice's turn runs at a
	c.Advance(1)
	receive(sb, "ev2", "U0BOB", "1.1") // bob's /abort is handled at b
	if who, ok, err := b.TurnStarter(ctx, "C1", "1.0"); err != nil || !ok || who != "U0ALICE" {
		t.Fatalf("TurnStarter at b = %q, %v, %v; want U0ALICE", who, ok, err)
	}
	if _, ok, err := b.TurnStarter(ctx, "C1", "9.0"); ok || err != nil {
		t.Fatalf("TurnStarter of another thread = %v, %v; want none", ok, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if who, ok, err := b.TurnStarter(ctx, "C1", "1.0"); ok || err != nil {
		t.Fatalf("TurnStarter after a died = %q, %v, %v; want none: its turn runs nowhere", who, ok, err)
	}
}
