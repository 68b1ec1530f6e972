package fleet

import (
	"context"
	"errors"
	"testing"

	"github.com/persona-runtime/agent/internal/store"
)

// An abort announcement reads back as written; what is not one is
// rejected.
func TestAbortPayload(t *testing.T) {
	t.Parallel()
	for _, a := range []abort{{thread: "C1:1.000100"}, {thread: "D1:1.000100", user: "U1"}} {
		got, err := parseAbort(a.payload())
		if err != nil || got != a {
			t.Errorf("%+v: read back %+v, %v", a, got, err)
		}
	}
	if p := (abort{thread: "C1:1.000100", user: "U1"}).payload(); p != "C1:1.000100\nU1" {
		t.Errorf("wire form %q, want the thread key, a line break and the user", p)
	}
	for _, bad := range []string{"", "C1", ":1.000100", "C1:1.000100\n", "C1:1.000100\nU1\nU2", "C1:1.000100\nU 1",
		"C1:1 2", "\nU1"} {
		if a, err := parseAbort(bad); !errors.Is(err, errBadPayload) {
			t.Errorf("%q: read as %+v, %v; want errBadPayload", bad, a, err)
		}
	}
	if id, err := parseApproval("0123abcd"); id != "0123abcd" || err != nil {
		t.Errorf("approval id read as %q, %v", id, err)
	}
	for _, bad := range []string{"", "a b", "a\nb"} {
		if _, err := parseApproval(bad); !errors.Is(err, errBadPayload) {
			t.Errorf("approval %q: %v, want errBadPayload", bad, err)
		}
	}
}

// A decision announced by one replica wakes the card's turn at another;
// an announcement that is not one is ignored.
func TestApprovalAcrossReplicas(t *testing.T) {
	t.Parallel()
	d := newDB()
	a, b := newReplica(d, "A", newClock(), 0), newReplica(d, "B", newClock(), 0)
	gate := newGate()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go b.Listen(ctx, gate, newEngine())
	<-d.listening

	if err := a.AnnounceApproval(t.Context(), ""); err == nil {
		t.Error("an empty approval id was announced")
	}
	_ = d.member("A").Notify(t.Context(), approvalTopic, "not an id")
	if err := a.AnnounceApproval(t.Context(), "ap1"); err != nil {
		t.Fatal(err)
	}
	if id := <-gate.woken; id != "ap1" {
		t.Errorf("woke %q, want ap1 (the bad payload ignored)", id)
	}
}

// /abort typed at one replica stops the thread's turn where it runs: the
// engine decorator announces it when the turn is not here, and the other
// replica's Listen stops it; AbortOwn only for the person who started
// it.
func TestAbortAcrossReplicas(t *testing.T) {
	t.Parallel()
	d := newDB()
	a, b := newReplica(d, "A", newClock(), 0), newReplica(d, "B", newClock(), 0)
	engineA, engineB := newEngine(), newEngine()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go b.Listen(ctx, newGate(), engineB)
	<-d.listening
	control := a.Engine(engineA)

	const key = "C1:1.000100"
	run := func() (unlock func()) {
		t.Helper()
		unlock, err := d.member("B").LockThread(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		engineB.mu.Lock()
		engineB.running[key] = "U1"
		engineB.mu.Unlock()
		return unlock
	}

	// Nothing runs anywhere: nothing is announced.
	if control.Abort(key) {
		t.Error("Abort of an idle thread reported a stop")
	}
	if stopped, running := control.AbortOwn(key, "U1"); stopped || running {
		t.Errorf("AbortOwn of an idle thread: stopped %v, running %v", stopped, running)
	}
	if sent := d.sent(); len(sent) != 0 {
		t.Errorf("announced %q for an idle thread", sent)
	}

	// The turn runs at B: A's /abort stops it there.
	unlock := run()
	if !control.Abort(key) {
		t.Error("Abort of a turn running at B reported no stop")
	}
	if stopped := <-engineB.stopped; stopped != key {
		t.Errorf("B stopped %q, want %q", stopped, key)
	}
	unlock()

	// AbortOwn: the starter is read from the inbox; another person's is
	// refused without an announcement, the starter's goes to B.
	unlock = run()
	d.add(row("EvB", "1.000100", "B", store.InboxRunning)) // started by U1
	before := len(d.sent())
	if stopped, running := control.AbortOwn(key, "U2"); stopped || !running {
		t.Errorf("AbortOwn by U2: stopped %v, running %v; want refused, running", stopped, running)
	}
	if sent := d.sent(); len(sent) != before {
		t.Errorf("announced %q for a person who did not start the turn", sent[before:])
	}
	if stopped, running := control.AbortOwn(key, "U1"); !stopped || !running {
		t.Errorf("AbortOwn by U1: stopped %v, running %v; want stopped", stopped, running)
	}
	if stopped := <-engineB.stopped; stopped != key {
		t.Errorf("B stopped %q, want %q", stopped, key)
	}
	if sent := d.sent(); sent[len(sent)-1] != abortTopic+" "+key+"\nU1" {
		t.Errorf("announced %q", sent[len(sent)-1])
	}
	unlock()

	// A turn running here is stopped here, with no announcement.
	engineA.mu.Lock()
	engineA.running[key] = "U1"
	engineA.mu.Unlock()
	before = len(d.sent())
	if !control.Abort(key) || <-engineA.stopped != key || len(d.sent()) != before {
		t.Error("a turn running here was not stopped here alone")
	}
}

// flakyBus fails its first Listen, as a lost connection does.
type flakyBus struct {
	*member
	failed bool
}

func (f *flakyBus) Listen(ctx context.Context, fn func(channel, payload string), channels ...string) error {
	if !f.failed {
		f.failed = true
		return errors.New("connection reset")
	}
	return f.member.Listen(ctx, fn, channels...)
}

// When the announcements' connection fails, the replica listens again
// after a pause on its clock.
func TestListenAgainAfterAFailure(t *testing.T) {
	t.Parallel()
	d := newDB()
	clk := newClock()
	r := New(&flakyBus{member: d.member("B")}, Options{MsgKey: msgKey, Clock: clk})
	gate := newGate()
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.Listen(ctx, gate, newEngine())
	}()
	if w := clk.waitArmed(t); w != relisten {
		t.Errorf("listens again after %v, want %v", w, relisten)
	}
	select {
	case id := <-d.listening:
		t.Fatalf("%s listened again before the pause", id)
	default:
	}
	clk.Advance(relisten)
	<-d.listening
	_ = d.member("A").Notify(t.Context(), approvalTopic, "ap1")
	if id := <-gate.woken; id != "ap1" {
		t.Errorf("woke %q, want ap1", id)
	}
	cancel()
	<-stopped
}
