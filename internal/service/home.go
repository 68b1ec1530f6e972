package service

import (
	"context"

	"github.com/persona-runtime/agent/internal/budget"
	"github.com/persona-runtime/agent/internal/home"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// newHome builds the App Home feature (internal/home) over the service's
// store, schedules, memory and budgets. Its Connections (the per-person
// accounts) are wired where they exist (SetHomeConnections).
func (s *Service) newHome(chat ChatAPI, budgets *budget.Guard) *home.Home {
	h := &home.Home{Store: s.store, Schedules: s.schedBook, Memory: memory.Commands{M: s.memories()},
		Access: s.persona.Access, Blocked: s.persona.IsBlocked, DefaultMode: pipeline.Mode(s.cfg.DefaultMode),
		Chat: chat, Now: s.now, Log: s.log}
	if budgets != nil {
		h.Spend = budgets
	}
	return h
}

// homeTab routes the Home tab's events (opened, a click in it) to the
// feature, ahead of the chain: they belong to no conversation; the feature
// authorises each by who sent it. Every other event goes down the chain.
type homeTab struct {
	home *home.Home
	next pipeline.Handler
}

func (h homeTab) Handle(ctx context.Context, ev *pipeline.Event) error {
	if ev.Kind != pipeline.KindHome || !ev.HomeTab {
		return h.next.Handle(ctx, ev)
	}
	if ev.Action != nil {
		return h.home.Click(ctx, ev.UserID, ev.Action.ActionID, ev.Action.Value)
	}
	return h.home.Opened(ctx, ev.UserID)
}

// SetHomeConnections gives the Home tab the per-person connected accounts
// (nil: the section is not shown).
func (s *Service) SetHomeConnections(c home.Connections) { s.home.Connections = c }
