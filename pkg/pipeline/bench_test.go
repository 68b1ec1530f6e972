package pipeline_test

import (
	"context"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// benchChain is the chain of cmd/agent (Recover, the seven stages, deliver)
// over fakes that cost nothing: an always-fresh store, the engaged thread
// C0TEAM:1.0, identity redaction, a session per call and a no-op agent.
func benchChain(b *testing.B) (pipeline.Handler, *fakeAgent) {
	b.Helper()
	tracer := noop.NewTracerProvider().Tracer("bench")
	m := newStageMetrics()
	seen := &fakeSeen{
		EventSeenFn: func(context.Context, string) (bool, error) { return false, nil },
		MarkEventFn: func(context.Context, string) (bool, error) { return true, nil },
	}
	// MarkEvent records its keys in the fake; the benchmark must not grow it.
	threads := &fakeEngagements{
		EngagedFn: func(_ context.Context, k string) (bool, bool, error) { return k == engagedThread, true, nil },
		SetFn:     func(context.Context, string, string, string, string, bool) (string, error) { return "", nil },
	}
	sess := fakeSession{id: "S1", key: engagedThread}
	sessions := &fakeSessions{AcquireFn: func(context.Context, *pipeline.Event) (pipeline.Session, func(), error) {
		return sess, func() {}, nil
	}}
	agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
	h := pipeline.Chain(pipeline.NewDeliver(countingPoster(), splitBars),
		pipeline.Recover(),
		pipeline.NewDrop(tracer, m, pipeline.DropDeps{Roster: worldRoster(), Seen: benchSeen{seen}, Self: selfFn,
			Drops: newDropCounter(), Log: discardLog()}),
		pipeline.NewEngage(tracer, m, benchEngagements{threads}, selfFn, discardLog()),
		pipeline.NewRedact(tracer, m, &fakeRedactor{RedactFn: func(s string) string { return s }}),
		pipeline.NewAuth(tracer, m, worldDirectory(nil), threadModes(nil), pipeline.ModeRules{Default: pipeline.ModeBypass}),
		pipeline.NewSession(tracer, m, sessions),
		pipeline.NewAgent(tracer, m, agent, &fakeActions{}, &fakeCommands{}, &fakeHome{}),
		pipeline.NewMarkup(tracer, m, convertFake),
	)
	return h, agent
}

// benchSeen and benchEngagements call the fakes' scripts without recording.
type benchSeen struct{ f *fakeSeen }

func (s benchSeen) EventSeen(ctx context.Context, k string) (bool, error) {
	return s.f.EventSeenFn(ctx, k)
}
func (s benchSeen) MarkEvent(ctx context.Context, k string) (bool, error) {
	return s.f.MarkEventFn(ctx, k)
}

type benchEngagements struct{ f *fakeEngagements }

func (e benchEngagements) Engaged(ctx context.Context, k string) (bool, bool, error) {
	return e.f.EngagedFn(ctx, k)
}
func (e benchEngagements) Engage(ctx context.Context, k, c, r, ts string) (string, error) {
	return e.f.SetFn(ctx, k, c, r, ts, true)
}

func (e benchEngagements) Disengage(ctx context.Context, k, ts string) error {
	_, err := e.f.SetFn(ctx, k, "", "", ts, false)
	return err
}

// BenchmarkDropPath: a stranger in a restricted channel; only drop runs.
func BenchmarkDropPath(b *testing.B) {
	h, agent := benchChain(b)
	ev := msg("E1", randomCh, outsider, "")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := h.Handle(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if agent.turns != 0 {
		b.Fatalf("the agent ran %d turns on the drop path", agent.turns)
	}
}

// BenchmarkEngagedPath: a member's plain reply in an engaged trusted thread,
// through drop, engage, redact, auth and session to a no-op agent. Each
// delivery is a new event (new id and ts), so none is a duplicate.
func BenchmarkEngagedPath(b *testing.B) {
	h, agent := benchChain(b)
	ids := make([]string, b.N)
	tss := make([]string, b.N)
	for i := range ids {
		ids[i] = "Ev" + strconv.Itoa(i)
		tss[i] = "2." + strconv.Itoa(i)
	}
	ev := msg("", trustedCh, member, "1.0")
	ev.Text = "and the second part?"
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev.ID, ev.TS = ids[i], tss[i]
		if err := h.Handle(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if agent.turns != b.N {
		b.Fatalf("the agent ran %d turns for %d events", agent.turns, b.N)
	}
}
