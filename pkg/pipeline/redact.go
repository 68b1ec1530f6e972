package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Redactor replaces secrets in text with "[redacted: <description>]".
type Redactor interface {
	Redact(text string) string
}

// NewRedact returns the redaction stage: the text of every inbound event is
// redacted before anything later (the auth stage, the session history, the
// model, the logs) sees it. Outbound text is redacted by the chat tools.
func NewRedact(tracer trace.Tracer, m StageMetrics, r Redactor) Middleware {
	if r == nil {
		panic("pipeline: NewRedact needs a Redactor")
	}
	return newStage("redact", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		ev.Text = r.Redact(ev.Text)
		if ev.Command != nil {
			ev.Command.Args = r.Redact(ev.Command.Args)
		}
		for i := range ev.Files {
			ev.Files[i].Name = r.Redact(ev.Files[i].Name)
		}
		return OutcomePass, "", next.Handle(ctx, ev)
	})
}
