package store

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/connect"
)

// Connections are one per (person, server), replaced by a new sign-in;
// sealed bytes come back as written; states are taken once, even by
// callbacks at once, and pruned a day after they expired.
func TestConnectionsAndStates(t *testing.T) {
	c := newClock()
	s := openAt(t, testPath(t), c)
	ctx := t.Context()
	blob := []byte{0, 1, 2, 0xff, 'x'}
	for _, r := range []connect.Record{
		{User: "U2", Server: "tracker", Account: "bob", Sealed: blob},
		{User: "U1", Server: "tracker", Account: "alice", Sealed: []byte("old")},
		{User: "U1", Server: "tracker", Account: "alice2", Sealed: blob},
		{User: "U1", Server: "code", Account: "alice", Sealed: blob},
	} {
		if err := s.PutConnection(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutConnection(ctx, connect.Record{User: "U1", Server: "x"}); err == nil {
		t.Fatal("a connection without a sealed token was stored")
	}
	r, ok, err := s.Connection(ctx, "U1", "tracker")
	if err != nil || !ok || r.Account != "alice2" || !bytes.Equal(r.Sealed, blob) {
		t.Fatalf("connection = %+v %v %v", r, ok, err)
	}
	if _, ok, err := s.Connection(ctx, "U3", "tracker"); ok || err != nil {
		t.Fatalf("U3's connection: %v %v", ok, err)
	}
	all, err := s.Connections(ctx, "")
	if err != nil || len(all) != 3 || all[0].User != "U1" || all[0].Server != "code" || all[2].User != "U2" {
		t.Fatalf("connections = %+v %v", all, err)
	}
	mine, err := s.Connections(ctx, "U2")
	if err != nil || len(mine) != 1 || mine[0].Account != "bob" {
		t.Fatalf("U2's connections = %+v %v", mine, err)
	}
	if gone, err := s.DeleteConnection(ctx, "U1", "tracker"); !gone || err != nil {
		t.Fatalf("delete: %v %v", gone, err)
	}
	if gone, err := s.DeleteConnection(ctx, "U1", "tracker"); gone || err != nil {
		t.Fatalf("delete again: %v %v", gone, err)
	}

	now := c.Now()
	st := connect.State{Hash: "h1", User: "U1", Server: "tracker", Channel: "C1", ThreadTS: "1.1", Sealed: blob, Expires: now.Add(10 * time.Minute)}
	if err := s.PutConnectState(ctx, st, now); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.UpdateConnectState(ctx, "h1", []byte("new")); !ok || err != nil {
		t.Fatalf("update: %v %v", ok, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for range 4 {
		wg.Go(func() {
			got, ok, won, err := s.TakeConnectState(ctx, "h1", now.Add(time.Minute))
			if err != nil || !ok || got.User != "U1" || string(got.Sealed) != "new" || got.Used.IsZero() {
				t.Errorf("take: %+v %v %v", got, ok, err)
			}
			if won {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if taken != 1 {
		t.Fatalf("state taken %d times", taken)
	}
	if ok, _ := s.UpdateConnectState(ctx, "h1", []byte("late")); ok {
		t.Fatal("a used state was updated")
	}
	if _, ok, _, err := s.TakeConnectState(ctx, "nope", now); ok || err != nil {
		t.Fatalf("unknown state: %v %v", ok, err)
	}
	// A day past its expiry, the next new state prunes it.
	later := now.Add(10*time.Minute + 25*time.Hour)
	if err := s.PutConnectState(ctx, connect.State{Hash: "h2", User: "U2", Server: "tracker", Sealed: blob, Expires: later.Add(time.Minute)}, later); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ConnectState(ctx, "h1"); ok || err != nil {
		t.Fatalf("expired state not pruned: %v %v", ok, err)
	}
}
