package service

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// pool counts its CloseIdleConnections calls.
type pool struct{ closed atomic.Int32 }

func (p *pool) CloseIdleConnections() { p.closed.Add(1) }

func TestIdleReleaseClosesThePoolsOnceNoSessionIsLive(t *testing.T) {
	c := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	var live atomic.Int32
	chat, model, servers := &pool{}, &pool{}, &pool{}
	r := newIdleRelease(func() int { return int(live.Load()) }, c, chat, model)
	r.add(servers)
	closed := func() (int32, int32) { return chat.closed.Load(), model.closed.Load() }

	// A session closed while others are live: nothing is armed.
	live.Store(2)
	r.sessionClosed()
	if n := c.Timers(); n != 0 {
		t.Fatalf("armed with sessions live: %d timers", n)
	}

	// The last one closed: the pools close idleQuiet later, not before.
	live.Store(0)
	r.sessionClosed()
	c.Advance(idleQuiet - time.Millisecond)
	if a, b := closed(); a != 0 || b != 0 {
		t.Fatalf("closed before idleQuiet: chat %d, model %d", a, b)
	}
	c.Advance(time.Millisecond)
	if a, b := closed(); a != 1 || b != 1 || servers.closed.Load() != 1 {
		t.Fatalf("after idleQuiet: chat closed %d times, model %d, tool servers %d, want 1 each", a, b, servers.closed.Load())
	}

	// Another close within the quiet time starts it again.
	r.sessionClosed()
	c.Advance(idleQuiet / 2)
	r.sessionClosed()
	c.Advance(idleQuiet - time.Millisecond)
	if a, _ := closed(); a != 1 {
		t.Fatalf("closed %d times before the second quiet time passed, want 1", a)
	}
	c.Advance(time.Millisecond)
	if a, _ := closed(); a != 2 {
		t.Fatalf("closed %d times after it, want 2", a)
	}

	// A session live again when the time comes: its calls keep theirs.
	r.sessionClosed()
	live.Store(1)
	c.Advance(idleQuiet)
	if a, _ := closed(); a != 2 {
		t.Fatalf("closed with a session live: %d times, want 2", a)
	}

	// Stopped with the service: never after.
	live.Store(0)
	r.sessionClosed()
	r.stop()
	c.Advance(idleQuiet)
	if a, _ := closed(); a != 2 {
		t.Fatalf("closed after stop: %d times, want 2", a)
	}
}

// The simulator's in-process platform and model have no pool: nothing is
// ever armed.
func TestIdleReleaseWithoutPools(t *testing.T) {
	c := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	r := newIdleRelease(func() int { return 0 }, c, struct{}{}, nil)
	r.add(struct{}{})
	r.sessionClosed()
	if n := c.Timers(); n != 0 {
		t.Fatalf("%d timers armed with no pool", n)
	}
	r.stop()
}
