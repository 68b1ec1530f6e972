package service

import (
	"cmp"
	"context"
	"time"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
)

// eventsKeep is how long a processed event's key is kept to catch its
// redelivery: the platform retries an HTTP event for about an hour and
// replays a socket's unacknowledged envelopes at its reconnection; a week,
// as long as a settled inbox row, covers a replica left down over a
// weekend.
const eventsKeep = 7 * 24 * time.Hour

// pruneEvery is how often the settled inbox rows and the old event keys
// are deleted, at start and then on a timer, so that a service that runs
// for months does not grow them without end (Deps.PruneEvery: tests
// shorten it).
const pruneEvery = time.Hour

// pruneLoop prunes at once, then every pruneEvery until ctx ends. Every
// replica of a fleet runs it: each prune is a single DELETE of rows older
// than a cut-off, which two replicas may run together (the second finds
// nothing left to delete).
func (s *Service) pruneLoop(ctx context.Context) {
	if s.cfg.Database() == store.InMemory {
		return // made by this run (the simulator): nothing is old in it
	}
	tick, c := clock.Or(s.clock).NewTicker(cmp.Or(s.deps.PruneEvery, pruneEvery))
	defer tick.Stop()
	for {
		s.prune(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c:
		}
	}
}

// prune deletes the settled inbox rows older than inbox.Keep, the event
// keys older than eventsKeep and the attachments older than
// AGENT_ATTACHMENTS_KEEP.
func (s *Service) prune(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	now := s.now()
	for _, p := range []struct {
		what string
		keep time.Duration
		del  func(context.Context, time.Time) (int64, error)
	}{
		{"inbox: pruned settled events", inbox.Keep, s.store.PruneInbox},
		{"pruned processed event keys", eventsKeep, s.store.PruneEvents},
	} {
		n, err := p.del(ctx, now.Add(-p.keep))
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "prune", "what", p.what, "err", err)
		case n > 0:
			s.log.DebugContext(ctx, p.what, "count", n)
		}
	}
	if s.attachQuota != nil && s.cfg.AttachmentsKeep > 0 {
		n, size, err := s.attachQuota.Prune(ctx, now.Add(-s.cfg.AttachmentsKeep))
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "prune", "what", "attachments", "err", err)
		case n > 0:
			s.log.InfoContext(ctx, "attachments: pruned old files", "count", n, "bytes", size,
				"keep", config.FormatDays(s.cfg.AttachmentsKeep), "used", s.attachQuota.Used())
		}
	}
}
