package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Session is the agent session of one chat thread.
type Session interface {
	ID() string
	ThreadKey() string
}

// Sessions finds the session of a thread.
type Sessions interface {
	// Acquire returns the thread's session, creating it on the first message
	// and resuming it when it was closed. release must be called when the
	// turn is over: it records activity and restarts the idle clock.
	Acquire(ctx context.Context, ev *Event) (s Session, release func(), err error)
}

type sessionKey struct{}

// NewContextWithSession returns ctx carrying s.
func NewContextWithSession(ctx context.Context, s Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFromContext returns the session the session stage looked up.
func SessionFromContext(ctx context.Context) (Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(Session)
	return s, ok
}

// NewSession returns the session lookup stage: it acquires the thread's
// session (live, resumed or new) for the agent turn of a message and
// releases it after; a scheduled run's too, in its target thread. Clicks
// and slash commands have no turn and pass.
func NewSession(tracer trace.Tracer, m StageMetrics, sessions Sessions) Middleware {
	if sessions == nil {
		panic("pipeline: NewSession needs Sessions")
	}
	return newStage("session", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		if ev.Kind != KindMessage && ev.Kind != KindSchedule {
			return OutcomePass, "", next.Handle(ctx, ev)
		}
		s, release, err := sessions.Acquire(ctx, ev)
		if err != nil {
			return OutcomeError, "", err
		}
		defer release()
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("session_id", s.ID()))
		return OutcomePass, "", next.Handle(NewContextWithSession(ctx, s), ev)
	})
}
