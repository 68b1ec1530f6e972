package agent

import (
	"context"
	"sync"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// turnSlot is one turn's hold on a place among the engine's slots
// (MaxTurns): taken before the turn starts, given back while the turn
// waits for a person (approval.Gate), taken again before it goes on, and
// given back when it ends. Its calls come from the turn's own goroutine;
// the lock keeps a stray concurrent call from taking a second place.
type turnSlot struct {
	slots chan struct{}
	// waiting, when set, is told when Acquire must wait for a place (the
	// engine's tests wait on it instead of sleeping).
	waiting func()
	mu      sync.Mutex
	held    bool
}

var _ pipeline.Slot = (*turnSlot)(nil)

// Acquire waits for a free place, honouring ctx; a no-op when held.
func (s *turnSlot) Acquire(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		return nil
	}
	// A done ctx wins over a free place: an aborted turn must not start
	// again (select picks at random among ready cases).
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.slots <- struct{}{}:
		s.held = true
		return nil
	default:
	}
	if s.waiting != nil {
		s.waiting()
	}
	select {
	case s.slots <- struct{}{}:
		s.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release gives the place back; a no-op when not held.
func (s *turnSlot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		<-s.slots
		s.held = false
	}
}
