package service

import (
	"cmp"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
)

// storeRetry is the retry of the stages' store calls (store.Retry):
// Deps.StoreRetry, logged to the service's log, its pauses on the system
// clock unless Deps.StoreRetry names one.
func (s *Service) storeRetry() store.Retry {
	r := s.deps.StoreRetry
	r.Log = cmp.Or(r.Log, s.log)
	r.Clock = cmp.Or[clock.Clock](r.Clock, clock.System)
	return r
}
