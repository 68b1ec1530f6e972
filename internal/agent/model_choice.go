package agent

import (
	"context"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

type modelKey struct{}

// withTurnModel carries the model of the turn's requests (Options.ModelOf),
// read once as the turn starts: a /model typed meanwhile applies from the
// thread's next turn.
func (e *Engine) withTurnModel(ctx context.Context, t *pipeline.Turn) context.Context {
	if e.o.ModelOf == nil {
		return ctx
	}
	if m := e.o.ModelOf(ctx, t); m != "" {
		return context.WithValue(ctx, modelKey{}, m)
	}
	return ctx
}

// modelOf is the model of a request made under ctx: the turn's, else the
// service's.
func (e *Engine) modelOf(ctx context.Context) string {
	if m, ok := ctx.Value(modelKey{}).(string); ok {
		return m
	}
	return e.o.Model.Model()
}
