package fleet

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/persona-runtime/agent/internal/store"
)

// The sweep takes over the unfinished events of dead replicas (and of a
// single process from before the fleet) at once, then every SweepEvery on
// the clock; it expires the approvals their threads waited for and hands
// them to resume; a live replica's events and finished ones stay.
func TestSweep(t *testing.T) {
	t.Parallel()
	d := newDB()
	d.add(row("EvDead", "1.000100", "B", store.InboxRunning))
	d.add(row("EvOld", "1.000200", "", store.InboxReceived))
	d.add(row("EvLive", "1.000300", "C", store.InboxRunning))
	d.add(row("EvDone", "1.000400", "B", store.InboxAnswered))
	d.dead["B"] = true
	clk := newClock()
	r := newReplica(d, "A", clk, 0)
	gate := newGate()
	resumed := make(chan []string, 4)
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.Sweep(ctx, gate, func(_ context.Context, entries []store.InboxEntry) {
			var ids []string
			for _, e := range entries {
				if e.Owner != "A" {
					t.Errorf("%s resumed as %q's, want this replica's", e.EventID, e.Owner)
				}
				ids = append(ids, e.EventID)
			}
			resumed <- ids
		})
	}()
	if got := <-resumed; !slices.Equal(got, []string{"EvDead", "EvOld"}) {
		t.Errorf("first sweep resumed %v, want EvDead and EvOld", got)
	}
	if w := clk.waitArmed(t); w != SweepEvery {
		t.Errorf("sweeps again after %v, want SweepEvery", w)
	}
	gate.mu.Lock()
	if len(gate.expired) != 1 || !slices.Equal(slices.Sorted(maps.Keys(gate.expired[0])), []string{"C1:1.000100"}) {
		t.Errorf("expired the approvals of %v, want the thread C1:1.000100 once", gate.expired)
	}
	gate.mu.Unlock()

	// Nothing new: the next sweep resumes nothing. Then C dies.
	clk.Advance(SweepEvery)
	clk.waitArmed(t)
	d.mu.Lock()
	d.dead["C"] = true
	d.mu.Unlock()
	clk.Advance(SweepEvery)
	if got := <-resumed; !slices.Equal(got, []string{"EvLive"}) {
		t.Errorf("after C died the sweep resumed %v, want EvLive", got)
	}
	clk.waitArmed(t)
	cancel()
	<-stopped
	if len(resumed) != 0 {
		t.Errorf("resumed more: %v", <-resumed)
	}
}
