package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// StageMetrics are the instruments every stage reports to: an outcome counter
// (labels stage, outcome) and a duration histogram (label stage). Either may
// be nil.
type StageMetrics struct {
	Outcomes *prometheus.CounterVec
	Duration *prometheus.HistogramVec
}

// observer is the telemetry a stage owns: its span and its metrics. It
// resolves the metric children once, at construction, so that the per-event
// cost is a map-free counter increment.
type observer struct {
	stage    string
	name     string
	tracer   trace.Tracer
	outcomes map[string]prometheus.Counter
	duration prometheus.Observer
}

func newObserver(stage string, tracer trace.Tracer, m StageMetrics) *observer {
	if tracer == nil {
		panic("pipeline: stage " + stage + " needs a tracer")
	}
	o := &observer{stage: stage, name: "pipeline." + stage, tracer: tracer, outcomes: map[string]prometheus.Counter{}}
	if m.Outcomes != nil {
		for _, out := range []string{OutcomePass, OutcomeDrop, OutcomeError, OutcomeDone} {
			o.outcomes[out] = m.Outcomes.WithLabelValues(stage, out)
		}
	}
	if m.Duration != nil {
		o.duration = m.Duration.WithLabelValues(stage)
	}
	return o
}

// start opens the stage's span.
func (o *observer) start(ctx context.Context) (context.Context, trace.Span, time.Time) {
	ctx, span := o.tracer.Start(ctx, o.name)
	return ctx, span, time.Now()
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

// fail ends the span of a stage whose own work failed (a store read, a
// lookup) and returns err as a *StageError naming the stage. Errors of the
// stages after it pass through end unchanged.
func (o *observer) fail(span trace.Span, began time.Time, err error) error {
	o.end(span, began, OutcomeError, "", err)
	return &StageError{Stage: o.stage, Err: err}
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
