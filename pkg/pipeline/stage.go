package pipeline

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Stage outcomes: the outcome label of agent_pipeline_stage_total.
const (
	OutcomePass  = "pass"  // the stage called the next handler
	OutcomeDrop  = "drop"  // the stage stopped the event on purpose
	OutcomeError = "error" // the stage or a later one failed
	OutcomeDone  = "done"  // the stage handled the event itself
)

// StageMetrics gives each stage its instruments, asked for once when the
// stage is built: the outcome counter agent_pipeline_stage_total{stage,
// outcome} and the duration histogram
// agent_pipeline_stage_duration_seconds{stage}. internal/metrics implements
// it over Prometheus, which this package does not import. A nil
// StageMetrics, or a nil instrument, reports nowhere.
type StageMetrics interface {
	Outcome(stage, outcome string) Counter
	Duration(stage string) Observer
}

// Counter is one labelled count (a prometheus.Counter).
type Counter interface{ Inc() }

// Observer is one labelled distribution (a prometheus.Observer).
type Observer interface{ Observe(seconds float64) }

// rule is what a stage does with one event, all that is its own: it calls
// next to pass the event on, or does not (a drop, or the agent stage
// handling it), and says how it went. outcome is OutcomePass, OutcomeDrop or
// OutcomeDone, and reason, when set, goes on the span (a drop reason, an
// engagement decision). An error is what next (or the handler the stage
// called) returned, passed on as it is; an error of the stage's own work (a
// store read) is returned with OutcomeError and leaves the stage as a
// *StageError naming it.
type rule func(ctx context.Context, ev *Event, next Handler) (outcome, reason string, err error)

// newStage returns the stage called name: r inside the telemetry every
// stage owns, a pipeline.<name> span (its outcome, reason and error) and
// its metrics.
func newStage(name string, tracer trace.Tracer, m StageMetrics, r rule) Middleware {
	o := newObserver(name, tracer, m)
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, ev *Event) error {
			ctx, span := o.tracer.Start(ctx, o.name)
			began := time.Now()
			outcome, reason, err := r(ctx, ev, next)
			o.end(span, began, outcome, reason, err)
			if outcome == OutcomeError && err != nil {
				return &StageError{Stage: o.stage, Err: err}
			}
			return err
		})
	}
}

// observer is the telemetry a stage owns: its span and its metrics. It
// resolves the metric children once, at construction, so that an event
// costs an increment and an observation, never a label lookup.
type observer struct {
	stage    string
	name     string
	tracer   trace.Tracer
	outcomes map[string]Counter
	duration Observer
}

func newObserver(stage string, tracer trace.Tracer, m StageMetrics) *observer {
	if tracer == nil {
		panic("pipeline: stage " + stage + " needs a tracer")
	}
	o := &observer{stage: stage, name: "pipeline." + stage, tracer: tracer, outcomes: map[string]Counter{}}
	if m != nil {
		for _, out := range []string{OutcomePass, OutcomeDrop, OutcomeError, OutcomeDone} {
			if c := m.Outcome(stage, out); c != nil {
				o.outcomes[out] = c
			}
		}
		o.duration = m.Duration(stage)
	}
	return o
}

// end records the outcome and closes the span. reason, when set, is added to
// the span (drop reasons, engagement decisions).
func (o *observer) end(span trace.Span, began time.Time, outcome, reason string, err error) {
	if err != nil {
		outcome = OutcomeError
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("outcome", outcome))
		if reason != "" {
			span.SetAttributes(attribute.String("reason", reason))
		}
		if outcome == OutcomeDrop {
			span.AddEvent("dropped", trace.WithAttributes(attribute.String("reason", reason)))
		}
	}
	span.End()
	if c := o.outcomes[outcome]; c != nil {
		c.Inc()
	}
	if o.duration != nil {
		o.duration.Observe(time.Since(began).Seconds())
	}
}

// StageError is the failure of a stage's own work, as opposed to the
// failure of a stage after it: Stage names it ("drop", "engage", "auth",
// "session"). The gateway reads it to know how far an event got: an event
// that failed in "auth" or "session" had passed the engagement rules.
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return e.Stage + ": " + e.Err.Error() }

func (e *StageError) Unwrap() error { return e.Err }

// FailedStage returns the stage whose own work failed in err, or "" when
// err is no StageError (a failure of the agent stage or after it).
func FailedStage(err error) string {
	var se *StageError
	if errors.As(err, &se) {
		return se.Stage
	}
	return ""
}
