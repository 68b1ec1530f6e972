package main

import (
	"context"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// newModels is what /model chooses from: AGENT_MODELS, the service's model
// (service) first.
func (s *service) newModels(service string) *commands.Models {
	return &commands.Models{Store: s.store, Choices: s.cfg.ModelChoices(service)}
}

// threadModel is the engine's ModelOf: the model a thread chose with
// /model (or its channel), else "" for the service's. A store that cannot
// be read leaves the turn on the service's model, logged: the turn still
// answers.
func (s *service) threadModel(models *commands.Models) func(ctx context.Context, t *pipeline.Turn) string {
	return func(ctx context.Context, t *pipeline.Turn) string {
		m, err := models.Current(ctx, t.Event.ThreadKey(), pipeline.ThreadKey(t.Event.ChannelID, ""))
		if err != nil {
			s.log.WarnContext(ctx, "thread model", "thread", t.Event.ThreadKey(), "err", err)
			return ""
		}
		return m
	}
}
