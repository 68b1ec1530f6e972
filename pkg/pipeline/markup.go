package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// NewMarkup returns the markup conversion stage: the agent's markdown in an
// outbound reply becomes the platform's dialect (convert) before delivery.
// Other events pass unchanged.
//
// tables, when given, finds the table a post or final edit shows natively
// (nil: none within the platform's limits).
func NewMarkup(tracer trace.Tracer, m StageMetrics, convert func(markdown string) string, tables ...func(markdown string) *Table) Middleware {
	if convert == nil {
		panic("pipeline: NewMarkup needs a converter")
	}
	return newStage("markup", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		if ev.Kind == KindReply && ev.Reply != nil && ev.Reply.Markdown {
			if ev.Reply.Op == ReplyStreamStart || ev.Reply.Op == ReplyStreamAppend {
				ev.Reply.Raw = ev.Text // the streaming API takes markdown
			}
			if ev.Reply.Op == ReplyPost || ev.Reply.Op == ReplyUpdate {
				for _, find := range tables {
					ev.Reply.Table = find(ev.Text)
				}
			}
			ev.Text = convert(ev.Text)
			ev.Reply.Markdown = false
		}
		return OutcomePass, "", next.Handle(ctx, ev)
	})
}
