package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

type fakeSession struct{ id, key string }

func (s fakeSession) ID() string        { return s.id }
func (s fakeSession) ThreadKey() string { return s.key }

// fakeSessions is a pipeline.Sessions scripted by its field.
type fakeSessions struct {
	AcquireFn func(ctx context.Context, ev *pipeline.Event) (pipeline.Session, func(), error)
}

func (f *fakeSessions) Acquire(ctx context.Context, ev *pipeline.Event) (pipeline.Session, func(), error) {
	return f.AcquireFn(ctx, ev)
}

func TestSession(t *testing.T) {
	errNext := errors.New("agent failed")
	tests := []struct {
		name    string
		nextErr error
	}{
		{"next succeeds", nil},
		{"next fails", errNext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trail []string
			var acquiredFor string
			sessions := &fakeSessions{AcquireFn: func(_ context.Context, ev *pipeline.Event) (pipeline.Session, func(), error) {
				trail = append(trail, "acquire")
				acquiredFor = ev.ThreadKey()
				return fakeSession{id: "S1", key: ev.ThreadKey()}, func() { trail = append(trail, "release") }, nil
			}}
			tracer, sr := newTracer()
			next := &terminal{err: tt.nextErr, onCall: func(ctx context.Context, _ *pipeline.Event) {
				trail = append(trail, "next")
				s, ok := pipeline.SessionFromContext(ctx)
				if !ok || s.ID() != "S1" || s.ThreadKey() != "C0TEAM:1.0" {
					t.Errorf("session in next's context = %v, %v", s, ok)
				}
			}}
			h := pipeline.Chain(next, pipeline.NewSession(tracer, nil, sessions))
			if err := h.Handle(context.Background(), msg("E1", trustedCh, member, "1.0")); err != tt.nextErr {
				t.Fatalf("err = %v, want %v", err, tt.nextErr)
			}
			if acquiredFor != "C0TEAM:1.0" {
				t.Errorf("acquired for %q", acquiredFor)
			}
			if got := strings.Join(trail, " "); got != "acquire next release" {
				t.Errorf("order = %q, want acquire next release", got)
			}
			s := endedSpan(t, sr, "pipeline.session")
			attrs := spanAttrs(s)
			if attrs["session_id"] != "S1" {
				t.Errorf("span session_id = %q", attrs["session_id"])
			}
			if tt.nextErr != nil {
				assertErrorSpan(t, sr, "pipeline.session")
			} else if attrs["outcome"] != pipeline.OutcomePass {
				t.Errorf("outcome = %q", attrs["outcome"])
			}
		})
	}
}

func TestSessionAcquireError(t *testing.T) {
	errAcquire := errors.New("session store down")
	sessions := &fakeSessions{AcquireFn: func(context.Context, *pipeline.Event) (pipeline.Session, func(), error) {
		return nil, nil, errAcquire
	}}
	tracer, sr := newTracer()
	next := &terminal{}
	h := pipeline.Chain(next, pipeline.NewSession(tracer, nil, sessions))
	if err := h.Handle(context.Background(), msg("E1", trustedCh, member, "1.0")); !errors.Is(err, errAcquire) {
		t.Fatalf("err = %v, want the Acquire error", err)
	} else if got := pipeline.FailedStage(err); got != "session" {
		t.Errorf("FailedStage = %q, want session", got)
	}
	if next.ran() {
		t.Error("next ran without a session")
	}
	assertErrorSpan(t, sr, "pipeline.session")
}

func TestSessionFromContextEmpty(t *testing.T) {
	if s, ok := pipeline.SessionFromContext(context.Background()); ok {
		t.Errorf("SessionFromContext(empty) = %v, true", s)
	}
}
