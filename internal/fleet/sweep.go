package fleet

import (
	"context"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Expirer expires the pending approvals of threads (the approval gate).
type Expirer interface {
	ExpireThreads(ctx context.Context, threads map[string]bool) (int, error)
}

// Sweep takes over the unfinished events of dead replicas until ctx is
// done: at once (a replica starting after a crash takes its own old
// events), then every SweepEvery. The approvals their threads waited for
// are expired (gate), and the events handed to resume (the inbox's
// rule of a crash restart: said in the thread, resumed, or given up).
func (r *Replica) Sweep(ctx context.Context, gate Expirer, resume func(ctx context.Context, entries []store.InboxEntry)) {
	for {
		start := r.clock.Now()
		entries, err := r.store.ClaimOrphans(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.WarnContext(ctx, "fleet: events of dead replicas not read", "err", err)
		case len(entries) > 0:
			r.log.InfoContext(ctx, "fleet: took over the events of a replica that stopped", "count", len(entries))
			r.expireThreadApprovals(ctx, gate, entries)
			resume(ctx, entries)
		}
		// Every SweepEvery from the last sweep's start, like a ticker.
		if r.sleep(ctx, SweepEvery-r.clock.Now().Sub(start)) != nil {
			return
		}
	}
}

// expireThreadApprovals expires the pending approvals of the threads whose
// events were taken over: the turn that waited for them died with its
// replica, and the resumed turn asks again.
func (r *Replica) expireThreadApprovals(ctx context.Context, gate Expirer, entries []store.InboxEntry) {
	threads := map[string]bool{}
	for _, e := range entries {
		threads[pipeline.ThreadKey(e.ChannelID, e.ThreadTS)] = true
	}
	n, err := gate.ExpireThreads(ctx, threads)
	if err != nil {
		r.log.WarnContext(ctx, "fleet: pending approvals of a stopped replica not expired", "err", err)
	} else if n > 0 {
		r.log.InfoContext(ctx, "fleet: expired the approvals a stopped replica waited for", "count", n)
	}
}
