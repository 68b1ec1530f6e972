package pipeline

import (
	"context"
	"errors"
)

// SessionStatus is the state of a thread's agent session as the chat
// platform shows it (its agent view: agents.sessions.setStatus). While a
// session is SessionProcessing the person sees the platform's stop button.
type SessionStatus string

// The statuses of an agent session.
const (
	// SessionProcessing: a turn runs (the platform offers its stop button).
	SessionProcessing SessionStatus = "processing"
	// SessionSuspended: the turn waits for a person (an approval card).
	SessionSuspended SessionStatus = "suspended"
	// SessionActive: the turn answered; the thread is open for more.
	SessionActive SessionStatus = "active"
	// SessionClosed: the session closed when the thread fell idle.
	SessionClosed SessionStatus = "closed"
)

// SessionUpdate moves the agent session of one thread to Status; the
// platform creates the session on its first update.
type SessionUpdate struct {
	ChannelID string
	ThreadTS  string // the thread's root
	Status    SessionStatus
	// Title and Initiator (who started the thread) are read by the
	// platform only when the update creates the session.
	Title     string
	Initiator string
}

// ErrNoAgentSessions is matched (errors.Is) by the error of a platform
// that refuses agent sessions (an old workspace, a token or an app that
// may not use them), now or at an earlier call: the caller shows the
// assistant status line instead, as before agent sessions.
var ErrNoAgentSessions = errors.New("the platform refuses agent sessions")

// Suspender is told when a running turn starts to wait for a person (an
// approval card) and when it goes on: the platform shows the thread's
// session suspended meanwhile, without its stop button.
type Suspender interface {
	// Suspend is called as the wait begins. resume is called when the
	// turn goes on after the wait, not when the wait ended the turn.
	Suspend(ctx context.Context) (resume func(ctx context.Context))
}

type suspenderKey struct{}

// NewContextWithSuspender returns ctx carrying the turn's Suspender.
func NewContextWithSuspender(ctx context.Context, s Suspender) context.Context {
	return context.WithValue(ctx, suspenderKey{}, s)
}

// SuspenderFromContext returns the Suspender in ctx, or one that does
// nothing when ctx carries none (no turn, or no agent sessions).
func SuspenderFromContext(ctx context.Context) Suspender {
	if s, ok := ctx.Value(suspenderKey{}).(Suspender); ok && s != nil {
		return s
	}
	return noSuspender{}
}

type noSuspender struct{}

func (noSuspender) Suspend(context.Context) func(context.Context) { return func(context.Context) {} }
