package approval_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// slot is a turn's pipeline.Slot that records what the gate does with it;
// Acquire tells acquiring, then waits for free (none when nil) or for ctx.
type slot struct {
	mu        sync.Mutex
	held      bool
	log       []string
	released  chan struct{}
	acquiring chan struct{}
	free      chan struct{}
}

func newSlot() *slot {
	return &slot{held: true, released: make(chan struct{}, 1), acquiring: make(chan struct{}, 1)}
}

func (s *slot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, "release")
	s.held = false
	s.released <- struct{}{}
}

func (s *slot) Acquire(ctx context.Context) error {
	s.acquiring <- struct{}{}
	if s.free != nil {
		select {
		case <-s.free:
		case <-ctx.Done():
			s.mu.Lock()
			defer s.mu.Unlock()
			s.log = append(s.log, "acquire: "+ctx.Err().Error())
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, "acquire")
	s.held = true
	return nil
}

func (s *slot) state() (bool, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held, append([]string(nil), s.log...)
}

// waitReleased waits until Ask gave the slot back.
func (s *slot) waitReleased(t *testing.T) {
	t.Helper()
	select {
	case <-s.released:
	case <-time.After(wait):
		t.Fatal("Ask waits for the decision holding the turn's slot")
	}
}

// Ask waits for the decision without the turn's slot, and takes it again
// before it returns the outcome: a decision, a timeout or the gate's close.
func TestAskGivesTheSlotBackWhileWaiting(t *testing.T) {
	for _, tt := range []struct {
		name   string
		soul   string
		decide func(h *harness, id string)
		state  string
	}{
		{"approved", soul, func(h *harness, id string) { h.click(anyone, pipeline.ActionApprove, id) }, store.ApprovalApproved},
		{"denied", soul, func(h *harness, id string) { h.click(anyone, pipeline.ActionDeny, id) }, store.ApprovalDenied},
		{"timed out", soul + "\n## Approval timeout\n- 1\n", func(h *harness, _ string) { h.armed(); h.clock.Advance(time.Second) }, store.ApprovalTimedOut},
		{"closed", soul, func(h *harness, _ string) { h.gate.Close() }, store.ApprovalExpired},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.soul)
			s := newSlot()
			done := h.ask(pipeline.NewContextWithSlot(context.Background(), s), bashRequest())
			id := h.card()
			s.waitReleased(t)
			tt.decide(h, id)
			r := h.result(done)
			if r.err != nil || r.out.State != tt.state {
				t.Fatalf("Ask = %+v, %v; want %s", r.out, r.err, tt.state)
			}
			if held, log := s.state(); !held || len(log) != 2 || log[0] != "release" || log[1] != "acquire" {
				t.Fatalf("slot held %v after Ask, calls %q; want held after release, acquire", held, log)
			}
		})
	}
}

// A decided Ask waiting for a slot again ends with its context (an /abort,
// shutdown) and returns the context's error, holding no slot.
func TestAskRetakingTheSlotEndsWithContext(t *testing.T) {
	h := newHarness(t, soul)
	s := newSlot()
	s.free = make(chan struct{}) // every slot is taken
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := h.ask(pipeline.NewContextWithSlot(ctx, s), bashRequest())
	id := h.card()
	s.waitReleased(t)
	h.click(anyone, pipeline.ActionApprove, id)
	select {
	case <-s.acquiring:
	case <-time.After(wait):
		t.Fatal("the decided Ask never asked for a slot again")
	}
	cancel()
	r := h.result(done)
	if !errors.Is(r.err, context.Canceled) || r.out.Approved() {
		t.Fatalf("Ask = %+v, %v; want context.Canceled", r.out, r.err)
	}
	if held, _ := s.state(); held {
		t.Fatal("Ask returned holding the slot it could not take")
	}
}

// Without a slot in the context (no turn), Ask works as before.
func TestAskWithoutSlot(t *testing.T) {
	h := newHarness(t, soul)
	done := h.ask(context.Background(), bashRequest())
	h.click(anyone, pipeline.ActionApprove, h.card())
	if r := h.result(done); r.err != nil || !r.out.Approved() {
		t.Fatalf("Ask = %+v, %v", r.out, r.err)
	}
}
