package approval_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// suspender is a turn's pipeline.Suspender that records what the gate
// tells it.
type suspender struct {
	mu        sync.Mutex
	log       []string
	suspended chan struct{}
}

func (s *suspender) Suspend(context.Context) func(context.Context) {
	s.mu.Lock()
	s.log = append(s.log, "suspend")
	s.mu.Unlock()
	s.suspended <- struct{}{}
	return func(context.Context) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.log = append(s.log, "resume")
	}
}

func (s *suspender) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// While a card waits, the turn's session is suspended; it resumes when the
// turn goes on (any decision), not when the wait ends the turn (an abort).
func TestAskSuspendsTheTurnWhileWaiting(t *testing.T) {
	for _, tt := range []struct {
		name  string
		abort bool
		want  []string
	}{
		{"decided", false, []string{"suspend", "resume"}},
		{"aborted", true, []string{"suspend"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, soul)
			s := &suspender{suspended: make(chan struct{}, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := h.ask(pipeline.NewContextWithSuspender(ctx, s), bashRequest())
			id := h.card()
			<-s.suspended
			if tt.abort {
				cancel()
			} else {
				h.click(anyone, pipeline.ActionApprove, id)
			}
			r := h.result(done)
			if tt.abort != errors.Is(r.err, context.Canceled) {
				t.Fatalf("Ask = %+v, %v", r.out, r.err)
			}
			if got := s.calls(); !slices.Equal(got, tt.want) {
				t.Fatalf("suspender calls = %q, want %q", got, tt.want)
			}
		})
	}
}
