package fleet

import (
	"context"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// LockThread is the gateway's LockThread with replicas: the thread's lock,
// taken once no older message of the thread is pending. It looks once the
// message has settled (Options.Settle after its receipt), so that an older
// one delivered about the same time is seen even if it is recorded after
// this one. An older one held by another live replica is waited for; one
// of this replica's own (queued behind, or a dead replica's, taken over by
// Sweep) goes first: this one yields its place in the queue
// (gateway.ErrYield), for at most maxYield.
func (r *Replica) LockThread(ctx context.Context, ev *pipeline.Event) (func(), error) {
	key, mk := ev.ThreadKey(), r.msgKey(ev)
	if err := r.settleWait(ctx, ev); err != nil {
		return nil, err
	}
	for {
		unlock, err := r.store.LockThread(ctx, key)
		if err != nil {
			return nil, err
		}
		if mk == "" || ev.Resumed {
			return unlock, nil
		}
		earlier, err := r.store.EarlierPending(ctx, ev.ChannelID, ev.RootTS(), mk)
		if err != nil {
			r.log.WarnContext(ctx, "fleet: order of the thread not checked", "event_id", ev.ID, "err", err)
			return unlock, nil
		}
		switch earlier {
		case store.EarlierNone:
			r.yields.Delete(ev.ID)
			return unlock, nil
		case store.EarlierHere:
			first, _ := r.yields.LoadOrStore(ev.ID, r.clock.Now())
			if r.clock.Now().Sub(first.(time.Time)) > maxYield {
				r.log.WarnContext(ctx, "fleet: an older message of the thread never came; running this one first", "event_id", ev.ID)
				r.yields.Delete(ev.ID)
				return unlock, nil
			}
			unlock()
			return nil, gateway.ErrYield
		}
		unlock()
		if err := r.sleep(ctx, orderPoll); err != nil {
			return nil, err
		}
	}
}

// settleWait waits until Options.Settle (AGENT_ORDER_SETTLE) has passed
// since ev was received, so that the thread's older messages (by the
// platform's ts) delivered about the same time, here or at another
// replica, are recorded before ev looks for them, and go first even though
// they were recorded after it. The settle covers the platform's skew
// between two deliveries (a backlog replayed on reconnection comes a
// millisecond apart, to either replica) plus the other replica's one-row
// insert. It is waited before the thread's lock is taken (an older
// message at another replica needs it), and only once: an event back from
// a yield is past it, and a message queued behind its thread's running
// turn has waited longer already.
func (r *Replica) settleWait(ctx context.Context, ev *pipeline.Event) error {
	if r.msgKey(ev) == "" || ev.Resumed || ev.Received.IsZero() {
		return nil
	}
	wait := r.settle - r.clock.Now().Sub(ev.Received)
	if wait <= 0 {
		return nil
	}
	return r.sleep(ctx, wait)
}
