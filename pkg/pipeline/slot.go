package pipeline

import "context"

// Slot is a running turn's place among the turns the agent runs at once
// (AGENT_MAX_TURNS). Code that makes a turn wait for a person (an approval
// card) gives the place back for the wait and takes one again before the
// turn goes on: a turn parked on a card then holds no other thread back.
type Slot interface {
	// Release gives the turn's place back; it does nothing when the turn
	// holds none.
	Release()
	// Acquire takes a place again, waiting until one is free; it does
	// nothing when the turn holds one. It returns ctx's error when ctx
	// ends first (the turn was aborted, or the service is shutting down):
	// the turn then holds no place and must end.
	Acquire(ctx context.Context) error
}

type slotKey struct{}

// NewContextWithSlot returns ctx carrying the turn's Slot.
func NewContextWithSlot(ctx context.Context, s Slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

// SlotFromContext returns the Slot in ctx, or one that does nothing when
// ctx carries none (no turn, or nothing caps the turns).
func SlotFromContext(ctx context.Context) Slot {
	if s, ok := ctx.Value(slotKey{}).(Slot); ok && s != nil {
		return s
	}
	return noSlot{}
}

type noSlot struct{}

func (noSlot) Release()                      {}
func (noSlot) Acquire(context.Context) error { return nil }
