package service

import (
	"context"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// resume runs again what the last run left unfinished (inbox.Resume),
// once the gateway takes events.
func (s *Service) resume(deliver func(*pipeline.Event)) {
	if s.cfg.Database() == store.InMemory {
		return // made by this run (the simulator): nothing from an earlier one
	}
	// (The settled events are pruned by pruneLoop, at start and hourly.)
	if s.fleet != nil {
		// Replicas: only the events of replicas that are gone, now and
		// whenever one goes.
		s.replica.Sweep(s.runCtx, s.gate, func(ctx context.Context, entries []store.InboxEntry) {
			s.inbox.Resume(ctx, entries, deliver)
		})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.inbox.ResumeUnfinished(ctx, s.started, deliver)
}
