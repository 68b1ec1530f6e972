package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Lines posted for events a crash cut short.
const (
	// msgResumed tells the user the runtime restarted while working on
	// their message and goes on with it.
	msgResumed = "I was restarted while working on this — picking it up again."
	// msgPoisoned ends an event whose turn crashed the runtime twice.
	msgPoisoned = "I couldn't finish this (the runtime failed twice); the operator has the details."
	// msgMaybeAnswered ends an event whose first answer was being posted
	// when the runtime stopped, when the thread cannot be read to know
	// whether it landed: posting it again could answer twice.
	msgMaybeAnswered = "I was restarted just as I was answering this. If you don't see my answer above, please ask again."
)

// poisonAttempts is how many runs of an event may end in a crash before
// it is given up: a third try would most likely crash again.
const poisonAttempts = 2

// inboxKeep is how long settled inbox rows are kept for `agent inbox`.
const inboxKeep = 7 * 24 * time.Hour

// journal is the gateway's Inbox over the store. The copy it keeps is
// redacted like everything else the runtime stores.
type journal struct {
	store    *store.Store
	redact   func(string) string
	outcomes *prometheus.CounterVec // agent_inbox_events_total{outcome}
	log      *slog.Logger
}

var _ gateway.Inbox = journal{}

// msgKey is channel:ts of a message, "" for a command.
func msgKey(ev *pipeline.Event) string {
	if ev.Kind != pipeline.KindMessage || ev.TS == "" {
		return ""
	}
	return ev.ChannelID + ":" + ev.TS
}

// Receive implements gateway.Inbox. A message's dedupe key is recorded in
// the same write (the drop stage reads the outcome off the event): the
// first of twins (a mention arrives as a message and as a mention) to be
// received is the one that runs.
func (j journal) Receive(ctx context.Context, ev *pipeline.Event) (bool, error) {
	cp := *ev
	cp.Text = j.redact(cp.Text)
	if cp.Command != nil {
		c := *cp.Command
		c.Args = j.redact(c.Args)
		cp.Command = &c
	}
	data, err := json.Marshal(&cp)
	if err != nil {
		return true, fmt.Errorf("inbox: encode event: %w", err)
	}
	key := pipeline.DedupeKey(ev)
	fresh, marked, err := j.store.InboxReceiveMark(ctx, store.InboxEntry{EventID: ev.ID, Kind: ev.Kind.String(), ChannelID: ev.ChannelID,
		ThreadTS: ev.RootTS(), UserID: ev.UserID, MsgKey: msgKey(ev), Event: data}, key)
	if err == nil && fresh && key != "" {
		ev.Marked, ev.Fresh = true, marked
	}
	return fresh, err
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

// Answering implements gateway.Inbox.
func (j journal) Answering(ctx context.Context, ev *pipeline.Event) error {
	ctx, span := storeSpan(ctx, "store.inbox_answering")
	err := j.store.InboxAnswering(ctx, ev.ID)
	endSpan(span, err)
	return err
}

// Start implements gateway.Inbox. It writes nothing: the event's first
// write records the start in its own transaction (store.WithInboxStart),
// so that a turn does not pay a write of its own to begin.
func (j journal) Start(ctx context.Context, ev *pipeline.Event, traceID string) context.Context {
	return store.WithInboxStart(ctx, ev.ID, traceID)
}

// Finish implements gateway.Inbox.
func (j journal) Finish(ctx context.Context, ev *pipeline.Event, state string, cause error) {
	text := ""
	if cause != nil {
		text = cause.Error()
	}
	ctx, span := storeSpan(ctx, "store.inbox_finish")
	span.SetAttributes(attribute.String("inbox.state", state))
	err := j.store.InboxFinish(ctx, ev.ID, state, text)
	endSpan(span, err)
	if err != nil {
		j.log.ErrorContext(ctx, "inbox: final state not recorded", "event_id", ev.ID, "state", state, "err", err)
		return
	}
	j.outcomes.WithLabelValues(state).Inc()
}

// Answered implements gateway.Inbox: the answered state goes with the
// event's next write (store.OweInboxFinish), the posting tool's result.
func (j journal) Answered(ctx context.Context, ev *pipeline.Event) {
	count := func() { j.outcomes.WithLabelValues(store.InboxAnswered).Inc() }
	owed, err := j.store.OweInboxFinish(ctx, ev.ID, store.InboxAnswered, "", count)
	if err != nil || !owed {
		j.Finish(ctx, ev, store.InboxAnswered, nil)
	}
}

// Flush implements gateway.Inbox. What it writes shows as events of the
// event's span.
func (j journal) Flush(ctx context.Context, ev *pipeline.Event) {
	if err := j.store.Flush(ctx); err != nil {
		j.log.ErrorContext(ctx, "inbox: final state not recorded", "event_id", ev.ID, "err", err)
	}
}

// deliveryChecker is a chat API that can read back whether the answer to
// an event is in its thread.
type deliveryChecker interface {
	Delivered(ctx context.Context, channelID, threadTS, eventID string) (bool, error)
}

// answerLanded reports whether an answer to ev is in its thread; an error
// when the chat API cannot tell.
func (s *service) answerLanded(ctx context.Context, ev *pipeline.Event) (bool, error) {
	dc, ok := s.chat.(deliveryChecker)
	if !ok {
		return false, errors.New("the chat API cannot read a thread back")
	}
	return dc.Delivered(ctx, ev.ChannelID, ev.RootTS(), ev.ID)
}

// resume runs again what the last run left unfinished, once the gateway
// takes events: each event gets a line in its thread saying so and runs
// from the persisted history; one whose runs crashed the runtime twice is
// given up with a line saying that instead. Of a mention's two events only
// one runs, and none when the other was answered.
func (s *service) resume(deliver func(*pipeline.Event)) {
	if s.cfg.Database() == store.Memory {
		return // made by this run (the simulator): nothing from an earlier one
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// (The settled events are pruned by pruneLoop, at start and hourly.)
	if s.fleet != nil {
		// Replicas: only the events of replicas that are gone, now and
		// whenever one goes.
		s.sweep(s.runCtx, deliver)
		return
	}
	entries, err := s.store.InboxUnfinished(ctx)
	if err != nil {
		s.log.ErrorContext(ctx, "inbox: unfinished events not read; they are not resumed", "err", err)
		return
	}
	// Events received by this run are its own: the transport delivers
	// while this runs.
	mine := func(e store.InboxEntry) bool { return !e.ReceivedAt.Before(s.started.Truncate(time.Millisecond)) }
	s.resumeEntries(ctx, slices.DeleteFunc(entries, mine), deliver)
}

// resumeEntries settles or runs again each event a stopped run left
// unfinished (see resume).
func (s *service) resumeEntries(ctx context.Context, entries []store.InboxEntry, deliver func(*pipeline.Event)) {
	j := s.journal
	seen := map[string]bool{}
	for _, e := range entries {
		var ev pipeline.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			s.log.ErrorContext(ctx, "inbox: event not decodable; given up", "event_id", e.EventID, "err", err)
			j.Finish(ctx, &pipeline.Event{ID: e.EventID}, store.InboxFailed, fmt.Errorf("not decodable: %w", err))
			continue
		}
		if e.MsgKey != "" {
			twin, err := s.store.InboxAnsweredKey(ctx, e.MsgKey)
			if err != nil {
				s.log.ErrorContext(ctx, "inbox: twin check", "event_id", e.EventID, "err", err)
			}
			if twin || seen[e.MsgKey] {
				j.Finish(ctx, &ev, store.InboxDropped, nil)
				continue
			}
			seen[e.MsgKey] = true
		}
		thread := pipeline.Message{ChannelID: ev.ChannelID, ThreadTS: ev.RootTS()}
		if e.State == store.InboxAnswering {
			// The first answer was being posted: read the thread to
			// know whether it landed.
			landed, err := s.answerLanded(ctx, &ev)
			switch {
			case err == nil && landed:
				s.log.InfoContext(ctx, "inbox: the answer had landed before the stop", "event_id", e.EventID,
					"channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "trace_id", e.TraceID)
				j.Finish(ctx, &ev, store.InboxAnswered, nil)
				continue
			case err != nil:
				s.log.WarnContext(ctx, "inbox: stopped while posting an answer, which may not have landed; told the thread",
					"event_id", e.EventID, "channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "trace_id", e.TraceID, "err", err)
				thread.Text = msgMaybeAnswered
				if _, err := s.chat.Post(ctx, thread); err != nil {
					s.log.ErrorContext(ctx, "inbox: line not posted", "event_id", e.EventID, "err", err)
				}
				j.Finish(ctx, &ev, store.InboxAnswered, nil)
				continue
			}
			// It did not land: the turn is resumed like any other.
		}
		if e.Attempts >= poisonAttempts {
			s.log.ErrorContext(ctx, "inbox: event crashed the runtime twice; given up", "event_id", e.EventID,
				"channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "attempts", e.Attempts, "trace_id", e.TraceID)
			thread.Text = msgPoisoned
			if _, err := s.chat.Post(ctx, thread); err != nil {
				s.log.ErrorContext(ctx, "inbox: poison line not posted", "event_id", e.EventID, "err", err)
			}
			j.Finish(ctx, &ev, store.InboxFailed, fmt.Errorf("the runtime crashed during %d runs (last trace %s)", e.Attempts, e.TraceID))
			s.metrics.InboxEvents.WithLabelValues("poisoned").Inc()
			continue
		}
		s.log.InfoContext(ctx, "inbox: resuming an event left unfinished", "event_id", e.EventID,
			"channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "attempts", e.Attempts, "trace_id", e.TraceID)
		if e.Attempts > 0 {
			// Its turn had begun: say why it starts over. One that never
			// started (queued, or handed back by a replica that stopped)
			// just runs.
			thread.Text = msgResumed
			if _, err := s.chat.Post(ctx, thread); err != nil {
				s.log.WarnContext(ctx, "inbox: resume line not posted", "event_id", e.EventID, "err", err)
			}
		}
		s.metrics.InboxEvents.WithLabelValues("resumed").Inc()
		ev.Resumed = true
		deliver(&ev)
	}
}
