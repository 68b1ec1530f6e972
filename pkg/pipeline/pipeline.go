package pipeline

import (
	"context"
	"fmt"
)

// Handler handles one Event.
//
// Handle returns nil when the event was dealt with, including when a stage
// decided to drop it: dropping is not an error, and a stage that drops records
// why as a reason label instead. A non-nil error means the event could not be
// handled; the gateway logs it once with the event's attributes.
//
// A Handler must not keep the *Event after Handle returns, and must not modify
// it after calling the next handler. Panics are recovered by the Recover
// middleware that wraps the whole chain, not by individual stages.
type Handler interface {
	Handle(ctx context.Context, ev *Event) error
}

// HandlerFunc adapts an ordinary function to a Handler.
type HandlerFunc func(ctx context.Context, ev *Event) error

// Handle calls f(ctx, ev).
func (f HandlerFunc) Handle(ctx context.Context, ev *Event) error { return f(ctx, ev) }

// Middleware wraps a Handler in a stage.
type Middleware func(next Handler) Handler

// Chain composes stages around a terminal handler. The first stage listed runs
// outermost. A nil stage or terminal is a wiring mistake and panics at startup.
func Chain(terminal Handler, stages ...Middleware) Handler {
	if terminal == nil {
		panic("pipeline: Chain with a nil terminal handler")
	}
	h := terminal
	for i := len(stages) - 1; i >= 0; i-- {
		if stages[i] == nil {
			panic(fmt.Sprintf("pipeline: Chain stage %d is nil", i))
		}
		h = stages[i](h)
		if h == nil {
			panic(fmt.Sprintf("pipeline: Chain stage %d returned a nil handler", i))
		}
	}
	return h
}
