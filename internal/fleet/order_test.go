package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

func message(id, ts string) *pipeline.Event {
	return &pipeline.Event{ID: id, Kind: pipeline.KindMessage, ChannelID: "C1", TS: ts, ThreadTS: "1.000100"}
}

func row(id, ts, owner, state string) store.InboxEntry {
	return store.InboxEntry{EventID: id, Kind: string(pipeline.KindMessage), ChannelID: "C1", ThreadTS: "1.000100",
		MsgKey: "C1:" + ts, Owner: owner, State: state, UserID: "U1"}
}

// A thread's older message queued at this replica goes first: the newer
// one, offered the lock first, yields its place once, and runs once the
// older one has.
func TestLockThreadOlderGoesFirst(t *testing.T) {
	t.Parallel()
	d := newDB()
	d.add(row("Ev1", "1.000100", "A", store.InboxReceived))
	d.add(row("Ev2", "1.000200", "A", store.InboxReceived))
	r := newReplica(d, "A", newClock(), 0)
	older, newer := message("Ev1", "1.000100"), message("Ev2", "1.000200")

	if _, err := r.LockThread(t.Context(), newer); !errors.Is(err, gateway.ErrYield) {
		t.Fatalf("the newer message: %v, want gateway.ErrYield", err)
	}
	if busy, _ := d.member("B").ThreadBusy(t.Context(), newer.ThreadKey()); busy {
		t.Fatal("the yielding message kept the thread's lock")
	}
	unlock, err := r.LockThread(t.Context(), older)
	if err != nil {
		t.Fatalf("the older message: %v, want the lock", err)
	}
	d.setState("Ev1", store.InboxAnswered)
	unlock()

	unlock, err = r.LockThread(t.Context(), newer)
	if err != nil {
		t.Fatalf("the newer message after the older one: %v, want the lock", err)
	}
	unlock()
	if _, ok := r.yields.Load("Ev2"); ok {
		t.Error("the newer message's yield is still remembered after it ran")
	}
}

// An older message of the thread held by another live replica is waited
// for, looking again every orderPoll on the clock; a dead replica's is
// this replica's to run (EarlierHere).
func TestLockThreadWaitsForAnotherReplica(t *testing.T) {
	t.Parallel()
	d := newDB()
	d.add(row("Ev1", "1.000100", "B", store.InboxRunning))
	clk := newClock()
	r := newReplica(d, "A", clk, 0)
	type result struct {
		unlock func()
		err    error
	}
	got := make(chan result, 1)
	go func() {
		unlock, err := r.LockThread(t.Context(), message("Ev2", "1.000200"))
		got <- result{unlock, err}
	}()
	for i := range 2 {
		if w := clk.waitArmed(t); w != orderPoll {
			t.Fatalf("waits %v, want orderPoll", w)
		}
		select {
		case res := <-got:
			t.Fatalf("ran before the other replica's older message was done: %v", res.err)
		default:
		}
		if i == 1 {
			d.setState("Ev1", store.InboxAnswered)
		}
		clk.Advance(orderPoll)
	}
	res := <-got
	if res.err != nil {
		t.Fatalf("after the older message: %v, want the lock", res.err)
	}
	res.unlock()

	// The other replica dies with an older message unfinished: this one
	// yields to it (it will run here, taken over by the sweep).
	d.add(row("Ev3", "1.000300", "B", store.InboxReceived))
	d.dead["B"] = true
	if _, err := r.LockThread(t.Context(), message("Ev4", "1.000400")); !errors.Is(err, gateway.ErrYield) {
		t.Errorf("behind a dead replica's message: %v, want gateway.ErrYield", err)
	}
}

// A message yields to an older one expected here for at most maxYield of
// the clock, then runs.
func TestLockThreadYieldsAtMostMaxYield(t *testing.T) {
	t.Parallel()
	d := newDB()
	d.add(row("Ev1", "1.000100", "A", store.InboxReceived)) // never runs
	clk := newClock()
	r := newReplica(d, "A", clk, 0)
	newer := message("Ev2", "1.000200")
	for range 2 {
		if _, err := r.LockThread(t.Context(), newer); !errors.Is(err, gateway.ErrYield) {
			t.Fatalf("%v, want gateway.ErrYield", err)
		}
		clk.Advance(maxYield / 2)
	}
	clk.Advance(time.Millisecond)
	unlock, err := r.LockThread(t.Context(), newer)
	if err != nil {
		t.Fatalf("past maxYield: %v, want the lock", err)
	}
	unlock()
}

// What has no place in a thread's order (a command) and a resumed event
// take the lock without looking at older messages.
func TestLockThreadUnordered(t *testing.T) {
	t.Parallel()
	d := newDB()
	d.add(row("Ev1", "1.000100", "A", store.InboxReceived))
	r := newReplica(d, "A", newClock(), time.Minute)
	resumed := message("Ev2", "1.000200")
	resumed.Resumed = true
	command := &pipeline.Event{ID: "Ev3", Kind: pipeline.KindCommand, ChannelID: "C1", ThreadTS: "1.000100", Received: time.Now()}
	for _, ev := range []*pipeline.Event{resumed, command} {
		unlock, err := r.LockThread(t.Context(), ev)
		if err != nil {
			t.Fatalf("%s: %v, want the lock", ev.ID, err)
		}
		unlock()
	}
}

// A thread message settles until Settle after its receipt on the clock,
// and not again; what has no place in a thread's order, or was received
// long ago, goes at once; shutdown ends the wait.
func TestSettle(t *testing.T) {
	t.Parallel()
	const settle = 50 * time.Millisecond
	clk := newClock()
	r := newReplica(newDB(), "A", clk, settle)
	msg := func(received time.Time) *pipeline.Event {
		return &pipeline.Event{ID: "Ev1", Kind: pipeline.KindMessage, ChannelID: "D1", TS: "1.000100", Received: received}
	}
	ev := msg(clk.Now().Add(-10 * time.Millisecond))
	done := make(chan error, 1)
	go func() { done <- r.settleWait(t.Context(), ev) }()
	if w := clk.waitArmed(t); w != settle-10*time.Millisecond {
		t.Errorf("waits %v, want the rest of the settle (40ms)", w)
	}
	clk.Advance(39 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("settled 49ms after its receipt (%v), want 50ms", err)
	default:
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := r.settleWait(t.Context(), ev); err != nil || len(clk.armed) != 0 {
		t.Errorf("settled again: %v, %d waits", err, len(clk.armed))
	}

	// None of these waits: under a done context, a wait would end at
	// once with its error.
	stopped, cancel := context.WithCancel(t.Context())
	cancel()
	for name, ev := range map[string]*pipeline.Event{
		"received long ago": msg(clk.Now().Add(-time.Minute)),
		"resumed":           {ID: "Ev2", Kind: pipeline.KindMessage, ChannelID: "D1", TS: "1.000200", Received: clk.Now(), Resumed: true},
		"a slash command":   {ID: "Ev3", Kind: pipeline.KindCommand, ChannelID: "D1", Received: clk.Now()},
		"never received":    {ID: "Ev4", Kind: pipeline.KindMessage, ChannelID: "D1", TS: "1.000300"},
	} {
		if err := r.settleWait(stopped, ev); err != nil {
			t.Errorf("%s: settle = %v, want no wait", name, err)
		}
	}
	if err := r.settleWait(stopped, msg(clk.Now())); !errors.Is(err, context.Canceled) {
		t.Errorf("settle at shutdown = %v, want context.Canceled", err)
	}
}
