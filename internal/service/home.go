package service

import (
	"context"

	"github.com/persona-runtime/agent/internal/budget"
	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/internal/home"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// newHome builds the App Home feature (internal/home) over the service's
// store, schedules, memory and budgets. Its Connections (the per-person
// accounts) are there when a tool server signs each person in.
func (s *Service) newHome(chat ChatAPI, budgets *budget.Guard) *home.Home {
	h := &home.Home{Store: s.store, Schedules: s.schedBook, Memory: memory.Commands{M: s.memories()},
		Access: s.persona.Access, Blocked: s.persona.IsBlocked, DefaultMode: pipeline.Mode(s.cfg.DefaultMode),
		Chat: chat, Now: s.now, Log: s.log}
	if budgets != nil {
		h.Spend = budgets
	}
	if len(s.connect.Servers()) > 0 {
		h.Connections = homeConnections{s.connect}
	}
	return h
}

// homeConnections gives the Home tab a person's connected accounts
// (internal/connect): listed, and disconnected through the same rule and
// text as /disconnect.
type homeConnections struct{ c *connect.Connect }

func (h homeConnections) List(ctx context.Context, user string) ([]home.Connection, error) {
	cs, err := h.c.List(ctx, user)
	out := make([]home.Connection, 0, len(cs))
	for _, c := range cs {
		out = append(out, home.Connection{Server: c.Server, Account: c.Account})
	}
	return out, err
}

func (h homeConnections) Disconnect(ctx context.Context, user, server string) (string, error) {
	return h.c.Disconnect(ctx, user, server)
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
