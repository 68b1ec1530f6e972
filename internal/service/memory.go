package service

import (
	"github.com/persona-runtime/agent/internal/memory"
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
