package service

import (
	"cmp"
	"context"
	"time"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// newModels is what /model chooses from: AGENT_MODELS, the service's model
// (service) first.
func (s *Service) newModels(service string) *commands.Models {
	return &commands.Models{Store: s.store, Choices: s.cfg.ModelChoices(service)}
}

// threadModel is the engine's ModelOf: the model a thread chose with
// /model (or its channel), else "" for the service's. A store that cannot
// be read leaves the turn on the service's model, logged: the turn still
// answers.
func (s *Service) threadModel(models *commands.Models) func(ctx context.Context, t *pipeline.Turn) string {
	return func(ctx context.Context, t *pipeline.Turn) string {
		m, err := models.Current(ctx, t.Event.ThreadKey(), pipeline.ThreadKey(t.Event.ChannelID, ""))
		if err != nil {
			s.log.WarnContext(ctx, "thread model", "thread", t.Event.ThreadKey(), "err", err)
			return ""
		}
		return m
	}
}

// serviceMutes is the drop stage's pipeline.Mutes: the store's mutes read
// at the service's clock (the simulator's, which its scenarios move).
type serviceMutes struct{ s *Service }

func (m serviceMutes) Muted(ctx context.Context, userID, threadKey, channelKey string) (bool, bool, error) {
	return m.s.store.Muted(ctx, userID, threadKey, channelKey, m.s.now())
}

// now is the service's clock: the simulator's when it set one.
func (s *Service) now() time.Time {
	return cmp.Or[clock.Clock](s.clock, clock.System).Now()
}
