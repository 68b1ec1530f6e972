package inbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Begin starts a run of ev (another attempt) under traceID and returns
// the context to handle it in, and end, to call once the chain is done
// with it, with the chain's error; halted is whether the gateway's
// shutdown cut the run short. An event the inbox does not keep, or a
// redelivered copy of one it recorded before, is left alone.
//
// Begin writes nothing: the run's first write records its start in its
// own transaction (store.WithInboxStart), so that a turn does not pay a
// write of its own to begin. The context carries the run's
// pipeline.Progress: the first message posted settles the event, with the
// event's next write, since a crash after it must not answer twice. Just
// before it, the event is marked answering: a crash before it is settled
// cannot tell whether the post went out, and the next start reads the
// thread back instead of guessing.
func (r *Recorder) Begin(ctx context.Context, ev *pipeline.Event, traceID string) (_ context.Context, end func(err error, halted bool)) {
	if !kept(ev) || ev.Redelivery {
		return ctx, func(error, bool) {}
	}
	ctx = store.WithInboxStart(ctx, ev.ID, traceID)
	p := pipeline.NewProgress(func() {
		if err := r.answering(context.WithoutCancel(ctx), ev); err != nil {
			r.o.Log.ErrorContext(ctx, "inbox: answering not recorded", "event_id", ev.ID, "err", err)
		}
	}, func() { r.answered(context.WithoutCancel(ctx), ev) })
	ctx = pipeline.NewContextWithProgress(ctx, p)
	return ctx, func(err error, halted bool) { r.settle(ctx, ev, p, err, halted) }
}

// settle records the final state of ev once the chain is done with it.
// An event cut short by shutdown stays running: the next start resumes
// it.
func (r *Recorder) settle(ctx context.Context, ev *pipeline.Event, p *pipeline.Progress, err error, halted bool) {
	reached, answered := p.State()
	ctx = context.WithoutCancel(ctx)
	switch {
	case answered:
		// Recorded when the answer was posted, or owed since.
		r.flush(ctx, ev)
	case err != nil && halted:
		// Shutdown: left running for the next start.
	case err != nil:
		if !reached {
			// The agent stage tells the thread of its own failures.
			r.tellFailed(ctx, ev, err)
		}
		r.finish(ctx, ev, store.InboxFailed, err)
	case reached:
		// The turn ended without a word (the model stayed silent even
		// after the stop guard): nothing more will come of it.
		r.finish(ctx, ev, store.InboxAnswered, nil)
	default:
		r.finish(ctx, ev, store.InboxDropped, nil)
	}
}

// storeSpan opens the span of a store write on an event's path, with the
// tracer of the event's own span.
func storeSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer("store").Start(ctx, name)
}

// endSpan records err on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// answering records that ev's first answer is about to be posted.
func (r *Recorder) answering(ctx context.Context, ev *pipeline.Event) error {
	ctx, span := storeSpan(ctx, "store.inbox_answering")
	err := r.o.Store.InboxAnswering(ctx, ev.ID)
	endSpan(span, err)
	return err
}

// finish records ev's final state, with the error of a failure.
func (r *Recorder) finish(ctx context.Context, ev *pipeline.Event, state string, cause error) {
	text := ""
	if cause != nil {
		text = cause.Error()
	}
	ctx, span := storeSpan(ctx, "store.inbox_finish")
	span.SetAttributes(attribute.String("inbox.state", state))
	err := r.o.Store.InboxFinish(ctx, ev.ID, state, text)
	endSpan(span, err)
	if err != nil {
		r.o.Log.ErrorContext(ctx, "inbox: final state not recorded", "event_id", ev.ID, "state", state, "err", err)
		return
	}
	r.count(state)
}

// answered records that ev's first answer was posted: the answered state
// goes with the event's next write (store.OweInboxFinish), the posting
// tool's result, or at once when the context carries no run of ev.
func (r *Recorder) answered(ctx context.Context, ev *pipeline.Event) {
	count := func() { r.count(store.InboxAnswered) }
	owed, err := r.o.Store.OweInboxFinish(ctx, ev.ID, store.InboxAnswered, "", count)
	if err != nil || !owed {
		r.finish(ctx, ev, store.InboxAnswered, nil)
	}
}

// flush writes what the run's context still owes (its start, its answered
// state). What it writes shows as events of the event's span.
func (r *Recorder) flush(ctx context.Context, ev *pipeline.Event) {
	if err := r.o.Store.Flush(ctx); err != nil {
		r.o.Log.ErrorContext(ctx, "inbox: final state not recorded", "event_id", ev.ID, "err", err)
	}
}
