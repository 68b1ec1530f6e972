package service

import (
	"time"

	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/pkg/clock"
)

// memories is the service's memory (internal/memory), made once the
// redactor is: a memory holding what it would redact is refused. Its
// persona-wide memories asked by the model wait on the approval gate's
// cards (none before the gate is made: they are refused).
func (s *Service) memories() *memory.Memories {
	if s.memory == nil {
		s.memory = &memory.Memories{Store: s.store, Redact: s.redactor.Redact, NewID: s.memoryIDs, Log: s.log,
			RoleOf: s.persona.RoleOf}
		if s.gate != nil {
			s.memory.Cards = s.gate
		}
	}
	return s.memory
}

// simStoreNow is a scenario's database clock: the scenario's simulated
// clock (which starts on 2026-01-05 09:00 UTC and moves with its advance
// steps), plus the real time elapsed since the scenario began, so that
// the dates recall and /memory show are the same at every run, rows
// written after an advance are dated after it, and what measures
// durations in the store still sees time pass.
func simStoreNow(clk clock.Clock, start time.Time) func() time.Time {
	if clk == nil {
		return nil
	}
	return func() time.Time { return clk.Now().Add(time.Since(start)) }
}
