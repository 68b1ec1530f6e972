package pipeline_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The ids of the sim world of interfaces.md, shared by every stage test.
const (
	botUser   = "U0BOT"
	botID     = "B0BOT"
	manager   = "U0MGR"
	backup    = "U0BACKUP"
	approver  = "U0APP"
	member    = "U0ALICE"
	outsider  = "U0BOB"
	blocked   = "U0EVIL"
	trustedCh = "C0TEAM"
	allowedCh = "C0PUB"
	randomCh  = "C0RANDOM"
	dmCh      = "D0SIM"
)

// newTracer returns a tracer whose ended spans land in the returned recorder.
func newTracer() (trace.Tracer, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	return tp.Tracer("pipeline_test"), sr
}

// endedSpan returns the one ended span called name, failing the test when
// there is not exactly one.
func endedSpan(t *testing.T, sr *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("ended spans named %q: %d, want 1", name, len(found))
	}
	return found[0]
}

// spanAttrs returns the string attributes of s.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// assertSpan checks the outcome (and, when want is not "", the reason) of
// the one span called name.
func assertSpan(t *testing.T, sr *tracetest.SpanRecorder, name, outcome, reason string) {
	t.Helper()
	attrs := spanAttrs(endedSpan(t, sr, name))
	if attrs["outcome"] != outcome {
		t.Errorf("span %s outcome = %q, want %q", name, attrs["outcome"], outcome)
	}
	if attrs["reason"] != reason {
		t.Errorf("span %s reason = %q, want %q", name, attrs["reason"], reason)
	}
}

// assertErrorSpan checks that the span called name recorded a failure.
func assertErrorSpan(t *testing.T, sr *tracetest.SpanRecorder, name string) {
	t.Helper()
	s := endedSpan(t, sr, name)
	if s.Status().Code != codes.Error {
		t.Errorf("span %s status = %v, want Error", name, s.Status().Code)
	}
	if got := spanAttrs(s)["outcome"]; got != pipeline.OutcomeError {
		t.Errorf("span %s outcome = %q, want error", name, got)
	}
}

// promStage is internal/metrics' pipeline.StageMetrics over fresh,
// unregistered instruments.
type promStage struct {
	outcomes *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func (p promStage) Outcome(stage, outcome string) pipeline.Counter {
	return p.outcomes.WithLabelValues(stage, outcome)
}

func (p promStage) Duration(stage string) pipeline.Observer {
	return p.duration.WithLabelValues(stage)
}

// newStageMetrics returns fresh, unregistered stage instruments.
func newStageMetrics() promStage {
	return promStage{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agent_pipeline_stage_total"}, []string{"stage", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agent_pipeline_stage_duration_seconds"}, []string{"stage"}),
	}
}

func outcomeCount(m promStage, stage, outcome string) float64 {
	return testutil.ToFloat64(m.outcomes.WithLabelValues(stage, outcome))
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// terminal is the handler after the stage under test: it records whether
// it ran, with what, and returns err.
type terminal struct {
	mu     sync.Mutex
	calls  int
	ctx    context.Context
	ev     pipeline.Event // a copy: a handler must not keep the *Event
	err    error
	onCall func(ctx context.Context, ev *pipeline.Event)
}

func (tm *terminal) Handle(ctx context.Context, ev *pipeline.Event) error {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.calls++
	tm.ctx, tm.ev = ctx, *ev
	if tm.onCall != nil {
		tm.onCall(ctx, ev)
	}
	return tm.err
}

func (tm *terminal) reset() {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.calls, tm.ctx, tm.ev = 0, nil, pipeline.Event{}
}

func (tm *terminal) ran() bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.calls > 0
}

func TestChainOrder(t *testing.T) {
	var trail []string
	stage := func(name string) pipeline.Middleware {
		return func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
				trail = append(trail, name+">")
				err := next.Handle(ctx, ev)
				trail = append(trail, "<"+name)
				return err
			})
		}
	}
	end := pipeline.HandlerFunc(func(context.Context, *pipeline.Event) error {
		trail = append(trail, "terminal")
		return nil
	})
	h := pipeline.Chain(end, stage("a"), stage("b"), stage("c"))
	if err := h.Handle(context.Background(), &pipeline.Event{Kind: pipeline.KindMessage}); err != nil {
		t.Fatal(err)
	}
	want := "a> b> c> terminal <c <b <a"
	if got := strings.Join(trail, " "); got != want {
		t.Errorf("order = %q, want %q", got, want)
	}
}

func TestChainWithoutStages(t *testing.T) {
	tm := &terminal{}
	if h := pipeline.Chain(tm); h != pipeline.Handler(tm) {
		t.Errorf("Chain(terminal) = %v, want the terminal itself", h)
	}
}

func TestChainPanicsOnWiringMistakes(t *testing.T) {
	pass := func(next pipeline.Handler) pipeline.Handler { return next }
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"nil terminal", func() { pipeline.Chain(nil, pass) }, "pipeline: Chain with a nil terminal handler"},
		{"nil stage", func() { pipeline.Chain(&terminal{}, pass, nil, pass) }, "pipeline: Chain stage 1 is nil"},
		{"stage returns nil", func() {
			pipeline.Chain(&terminal{}, func(pipeline.Handler) pipeline.Handler { return nil })
		}, "pipeline: Chain stage 0 returned a nil handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := panicValue(tt.call); got != tt.want {
				t.Errorf("panic = %v, want %q", got, tt.want)
			}
		})
	}
}

// panicValue runs f and returns what it panicked with (nil if it did not).
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

func TestRecover(t *testing.T) {
	sentinel := errors.New("stage failed")
	tests := []struct {
		name      string
		terminal  pipeline.HandlerFunc
		wantPanic any
		wantErr   error
	}{
		{"nil passes", func(context.Context, *pipeline.Event) error { return nil }, nil, nil},
		{"error passes unchanged", func(context.Context, *pipeline.Event) error { return sentinel }, nil, sentinel},
		{"panic string", func(context.Context, *pipeline.Event) error { panic("boom") }, "boom", nil},
		{"panic error", func(context.Context, *pipeline.Event) error { panic(sentinel) }, sentinel, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := pipeline.Chain(tt.terminal, pipeline.Recover())
			err := h.Handle(context.Background(), &pipeline.Event{Kind: pipeline.KindMessage})
			if tt.wantPanic == nil {
				if err != tt.wantErr {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			var pe *pipeline.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %#v, want a *PanicError", err)
			}
			if pe.Value != tt.wantPanic {
				t.Errorf("Value = %v, want %v", pe.Value, tt.wantPanic)
			}
			if !strings.Contains(string(pe.Stack), "pipeline_test.TestRecover") {
				t.Errorf("Stack does not show where it panicked:\n%s", pe.Stack)
			}
			if want := "panic: " + errString(tt.wantPanic); err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func errString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	return v.(string)
}

// TestRecoverDeepInChain: a panic in a stage below others still reaches
// Recover as an error and the deferred work of the stages above runs.
func TestRecoverDeepInChain(t *testing.T) {
	tracer, sr := newTracer()
	released := false
	sessions := &fakeSessions{AcquireFn: func(context.Context, *pipeline.Event) (pipeline.Session, func(), error) {
		return fakeSession{id: "S1"}, func() { released = true }, nil
	}}
	h := pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Event) error { panic("deep") }),
		pipeline.Recover(), pipeline.NewSession(tracer, nil, sessions))
	err := h.Handle(context.Background(), &pipeline.Event{Kind: pipeline.KindMessage})
	var pe *pipeline.PanicError
	if !errors.As(err, &pe) || pe.Value != "deep" {
		t.Fatalf("err = %v, want *PanicError(deep)", err)
	}
	if !released {
		t.Error("session not released after a panic below it")
	}
	// The panicking stage never ended its span: only Recover saw the panic.
	if n := len(sr.Ended()); n != 0 {
		t.Errorf("%d spans ended, want 0", n)
	}
}

func TestConstructorsPanicOnMissingDeps(t *testing.T) {
	tracer, _ := newTracer()
	var m pipeline.StageMetrics
	drops := newDropCounter()
	full := pipeline.DropDeps{Roster: worldRoster(), Seen: memSeen(), Self: selfFn, Drops: drops, Log: discardLog()}
	without := func(edit func(*pipeline.DropDeps)) func() {
		return func() {
			d := full
			edit(&d)
			pipeline.NewDrop(tracer, m, d)
		}
	}
	tests := []struct {
		name string
		call func()
		want string // a substring of the panic message
	}{
		{"drop without roster", without(func(d *pipeline.DropDeps) { d.Roster = nil }), "pipeline: NewDrop needs"},
		{"drop without seen", without(func(d *pipeline.DropDeps) { d.Seen = nil }), "pipeline: NewDrop needs"},
		{"drop without self", without(func(d *pipeline.DropDeps) { d.Self = nil }), "pipeline: NewDrop needs"},
		{"drop without counter", without(func(d *pipeline.DropDeps) { d.Drops = nil }), "pipeline: NewDrop needs"},
		{"drop without log", without(func(d *pipeline.DropDeps) { d.Log = nil }), "pipeline: NewDrop needs"},
		{"drop without tracer", func() { pipeline.NewDrop(nil, m, full) }, "pipeline: stage drop needs a tracer"},
		{"engage without threads", func() { pipeline.NewEngage(tracer, m, nil, selfFn, discardLog()) }, "pipeline: NewEngage needs"},
		{"engage without self", func() { pipeline.NewEngage(tracer, m, &fakeEngagements{}, nil, discardLog()) }, "pipeline: NewEngage needs"},
		{"redact without redactor", func() { pipeline.NewRedact(tracer, m, nil) }, "pipeline: NewRedact needs"},
		{"auth without directory", func() { pipeline.NewAuth(tracer, m, nil, &fakeModes{}, pipeline.ModeRules{Default: pipeline.ModeAsk}) }, "pipeline: NewAuth needs"},
		{"auth without modes", func() {
			pipeline.NewAuth(tracer, m, &fakeDirectory{}, nil, pipeline.ModeRules{Default: pipeline.ModeAsk})
		}, "pipeline: NewAuth needs"},
		{"session without sessions", func() { pipeline.NewSession(tracer, m, nil) }, "pipeline: NewSession needs"},
		{"agent without agent", func() { pipeline.NewAgent(tracer, m, nil, nil, nil, nil) }, "pipeline: NewAgent needs"},
		{"markup without converter", func() { pipeline.NewMarkup(tracer, m, nil) }, "pipeline: NewMarkup needs"},
		{"deliver without poster", func() { pipeline.NewDeliver(nil, splitBars) }, "pipeline: NewDeliver needs"},
		{"deliver without splitter", func() { pipeline.NewDeliver(&fakePoster{}, nil) }, "pipeline: NewDeliver needs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := panicValue(tt.call).(string)
			if !strings.Contains(got, tt.want) {
				t.Errorf("panic = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

func TestEventHelpers(t *testing.T) {
	tests := []struct {
		name    string
		ev      pipeline.Event
		wantKey string
		wantDM  bool
	}{
		{"channel root", pipeline.Event{ChannelID: trustedCh, ChannelType: pipeline.ChannelPublic, TS: "1.1"}, "C0TEAM:1.1", false},
		{"channel reply", pipeline.Event{ChannelID: trustedCh, ChannelType: pipeline.ChannelPublic, TS: "2.2", ThreadTS: "1.1"}, "C0TEAM:1.1", false},
		{"im", pipeline.Event{ChannelID: dmCh, ChannelType: pipeline.ChannelIM, TS: "1.1"}, "D0SIM:1.1", true},
		{"D channel without type", pipeline.Event{ChannelID: dmCh, TS: "1.1"}, "D0SIM:1.1", true},
		{"mpim is not a DM", pipeline.Event{ChannelID: "G0GROUP", ChannelType: pipeline.ChannelMPIM, TS: "1.1"}, "G0GROUP:1.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ev.ThreadKey(); got != tt.wantKey {
				t.Errorf("ThreadKey = %q, want %q", got, tt.wantKey)
			}
			if got := tt.ev.IsDM(); got != tt.wantDM {
				t.Errorf("IsDM = %v, want %v", got, tt.wantDM)
			}
		})
	}
}

func TestParseModeAndLayer(t *testing.T) {
	for _, s := range []string{"ask", "accept-edits", "bypass", "plan", "dont-ask"} {
		if m, err := pipeline.ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"trusted", "allowed", "restricted", "dm"} {
		if l, err := pipeline.ParseLayer(s); err != nil || string(l) != s {
			t.Errorf("ParseLayer(%q) = %q, %v", s, l, err)
		}
	}
	for _, s := range []string{"", "Ask", "yolo"} {
		if _, err := pipeline.ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted", s)
		}
		if _, err := pipeline.ParseLayer(s); err == nil {
			t.Errorf("ParseLayer(%q) accepted", s)
		}
	}
}
