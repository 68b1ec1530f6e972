package service

import (
	"context"

	"github.com/persona-runtime/agent/internal/fleet"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/store"
)

// joinFleet makes this service a replica when its store is shared
// (Postgres): the protocol is internal/fleet's, over the store's fleet.
func (s *Service) joinFleet(ctx context.Context) error {
	if !store.IsPostgres(s.cfg.Database()) {
		return nil
	}
	f, err := s.store.OpenFleet(ctx, fleet.NewID())
	if err != nil {
		return err
	}
	s.fleet = f
	s.replica = fleet.New(f, fleet.Options{Settle: s.cfg.OrderSettle, MsgKey: inbox.MsgKey, Clock: s.clock, Log: s.log})
	s.closers = append(s.closers, func(context.Context) error { return f.Close() })
	s.log.Info("joined the fleet of replicas", "replica", f.ID())
	return nil
}
