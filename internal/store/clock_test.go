package store

import (
	"context"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// Every stamp comes from Options.Clock: a manual clock's time, moved only
// by Advance.
func TestStampsComeFromTheClock(t *testing.T) {
	ctx := context.Background()
	c := clock.NewManual(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	s, err := Open(ctx, testPath(t), Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	asked := c.Now()
	if err := s.CreateApproval(ctx, Approval{ID: "ap1", ThreadKey: "C1:1.0", Category: "deploy"}); err != nil {
		t.Fatal(err)
	}
	c.Advance(15 * time.Minute)
	a, err := s.DecideApproval(ctx, "ap1", ApprovalTimedOut, "")
	if err != nil {
		t.Fatal(err)
	}
	if !a.RequestedAt.Equal(asked) || !a.DecidedAt.Equal(asked.Add(15*time.Minute)) {
		t.Fatalf("requested at %v, decided at %v; want %v and 15 minutes on", a.RequestedAt, a.DecidedAt, asked)
	}
}

// Rows stamped at one instant (a simulated clock standing still) keep a
// stable order: their ids break the tie.
func TestEqualStampsKeepTheirOrder(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testPath(t), Options{Clock: clock.NewManual(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, id := range []string{"ap3", "ap1", "ap2"} {
		if err := s.CreateApproval(ctx, Approval{ID: id, ThreadKey: "C1:1.0", Category: "deploy"}); err != nil {
			t.Fatal(err)
		}
	}
	pending, err := s.PendingApprovals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range pending {
		ids = append(ids, a.ID)
	}
	if len(ids) != 3 || ids[0] != "ap1" || ids[1] != "ap2" || ids[2] != "ap3" {
		t.Fatalf("pending = %v, want [ap1 ap2 ap3]", ids)
	}
}

// A pooled in-memory store stamps with the clock of the Get that took it,
// and a store without one with the system clock.
func TestPooledStoreTakesTheNewClock(t *testing.T) {
	ctx := context.Background()
	var pool InMemoryPool
	first := clock.NewManual(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	s, err := pool.Get(ctx, Options{Clock: first})
	if err != nil {
		t.Fatal(err)
	}
	if !s.now().Equal(first.Now()) {
		t.Fatalf("now = %v, want the first clock's %v", s.now(), first.Now())
	}
	if err := pool.Put(ctx, s); err != nil {
		t.Fatal(err)
	}
	second := clock.NewManual(time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC))
	if s, err = pool.Get(ctx, Options{Clock: second}); err != nil {
		t.Fatal(err)
	}
	if !s.now().Equal(second.Now()) {
		t.Fatalf("now = %v, want the second clock's %v", s.now(), second.Now())
	}
	if err := pool.Put(ctx, s); err != nil {
		t.Fatal(err)
	}
	if s, err = pool.Get(ctx, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := time.Now()
	now := s.now()
	if now.Before(before) || now.After(time.Now()) {
		t.Fatalf("now = %v without a clock, want the system's", now)
	}
}
